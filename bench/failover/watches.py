"""What the failover proof samples beside the writers, each in its own thread: the cluster
manager's choice of primary, every data node's own role, and (for the reasons of failing checks)
dbcheck's verdict on every write server.

A sample is (t_sent, t_recv, value): the question left at t_sent, its answer (or the lack of
one) was recorded at t_recv, and the value held at some moment in between. Times are
time.monotonic().
"""

import pwd
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg2

from lab.dbcheck import password_owner
from lab.periodic import Periodic
from lab.writers import pg_wait

ROLE_TIMEOUT = 0.5  # seconds a node has to answer its role; silence is recorded as such
PRIMARY, REPLICA = "primary", "replica"
# Flags on the master that make a Sentinel's answer not count (dbcheck's SentinelView::unsettled()).
UNSETTLED = {"o_down", "failover_in_progress"}


class ManagerWatch(Periodic):
    """Samples the manager's primary (a node name, or None when it names none or does not
    answer) every 100 ms: samples [(t_sent, t_recv, primary)]; `silent`: the sent times of the
    samples it did not answer (an etcd that is down names nobody, but has not said so either:
    losses.ManagerView does not read that silence as the manager having moved)."""

    def __init__(self, ask):
        super().__init__("manager-watch", 0.1, max_seconds=900)
        self.ask, self.samples, self.silent = ask, [], set()

    def tick(self):
        t = time.monotonic()
        try:
            p = self.ask()
        except Exception:  # noqa: BLE001 - an unreachable manager names nobody
            p = None
            self.silent.add(t)
        self.samples.append((t, time.monotonic(), p))

    def back_after(self, since):
        """The received time of the first sample at/after `since` naming a primary (after an
        outage of the manager itself: when it names one again), or None."""
        return next((tr for ts, tr, p in list(self.samples) if ts >= since and p is not None), None)

    def switch(self, old, since):
        """(T0', T0): the sent time of the last sample at/after `since` naming `old`, and the
        received time of the first one after it naming another primary; (None, None) when the
        manager never named another."""
        last_old = since
        for ts, tr, p in list(self.samples):
            if ts < since:
                continue
            if p == old:
                last_old = ts
            elif p is not None:
                return last_old, tr
        return None, None

    def reverted(self, old, since):
        """True when the manager named `old` again after having named another primary."""
        _, t0 = self.switch(old, since)
        return bool(t0) and any(ts > t0 and p == old for ts, _, p in self.samples)


class RoleWatch(Periodic):
    """Samples one data node's own role every `interval` s with `ask` (returns PRIMARY or
    REPLICA, raises when the node does not answer within ROLE_TIMEOUT): samples
    [(t_sent, t_recv, PRIMARY | REPLICA | None)], None for no answer."""

    def __init__(self, name, ask, interval=0.1):
        super().__init__(f"role-{name}", interval, max_seconds=900)
        self.ask, self.samples = ask, []

    def tick(self):
        t = time.monotonic()
        try:
            role = self.ask()
        except Exception:  # noqa: BLE001 - a node that does not answer in time is recorded silent
            role = None
        self.samples.append((t, time.monotonic(), role))

    def finish(self):
        close = getattr(self.ask, "close", None)
        if close:
            close()


class PgRole:
    """pg_is_in_recovery() of one member over a connection kept open (reopened after any
    failure), every step bounded by ROLE_TIMEOUT: PRIMARY when false, REPLICA when true."""

    def __init__(self, dsn):
        self.dsn, self.conn = dsn, None

    def __call__(self):
        deadline = time.monotonic() + ROLE_TIMEOUT
        try:
            if self.conn is None:
                self.conn = psycopg2.connect(async_=1, **self.dsn)
                pg_wait(self.conn, deadline)
            cur = self.conn.cursor()
            cur.execute("SELECT pg_is_in_recovery()")
            pg_wait(self.conn, deadline)
            return REPLICA if cur.fetchone()[0] else PRIMARY
        except Exception:
            self.close()  # a late answer must never be read as the next one
            raise

    def close(self):
        if self.conn is not None:
            conn, self.conn = self.conn, None
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - closing a broken connection may fail too
                pass


def sentinel_rule_primary(answers, configured, node_by_addr):
    """dbcheck's own rule for the Sentinels' opinion (common/core/sentinel_vote.cpp,
    SentinelView::unsettled() in redis_replies.cpp): a Sentinel's answer counts only when it
    names a master whose SENTINEL MASTER flags have neither `o_down` nor `failover_in_progress`,
    and a master is named when at least configured // 2 + 1 Sentinels count for it (a Sentinel
    that errs or is silent counts against). `answers`: per Sentinel, None (no answer, an error,
    or no master known) or (address 'host:port', flags string). Returns node_by_addr(address)
    of the named master, or None."""
    settled = []
    for a in answers:
        if a is not None and not UNSETTLED & set(a[1].split(",")):
            settled.append(a[0])
    needed = configured // 2 + 1
    for addr in set(settled):
        if settled.count(addr) >= needed:
            return node_by_addr(addr)
    return None


class SentinelManager:
    """The Sentinels' choice of master by sentinel_rule_primary(): every Sentinel asked in
    parallel SENTINEL GET-MASTER-ADDR-BY-NAME and SENTINEL MASTER (as dbcheck asks them), each
    within ROLE_TIMEOUT. Returns the node's name, or None."""

    def __init__(self, cluster, master_name, pipeline, admin_auth):
        self.cluster, self.master_name = cluster, master_name
        self.pipeline, self.auth = pipeline, admin_auth
        self.pool = ThreadPoolExecutor(len(cluster.sentinels()), thread_name_prefix="sentinel-view")

    def _ask(self, s):
        try:
            addr, master = self.pipeline(s.port, [("SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.master_name),
                                                  ("SENTINEL", "MASTER", self.master_name)],
                                         timeout=ROLE_TIMEOUT, host=s.ip, **self.auth)
        except Exception:  # noqa: BLE001 - silent or failed: does not count
            return None
        if isinstance(addr, Exception) or not addr or isinstance(master, Exception):
            return None
        fields = dict(zip(master[::2], master[1::2]))
        if "flags" not in fields:
            return None  # dbcheck: a SENTINEL MASTER reply without flags is malformed
        return f"{addr[0]}:{addr[1]}", fields["flags"]

    def __call__(self):
        answers = list(self.pool.map(self._ask, self.cluster.sentinels()))
        node = sentinel_rule_primary(answers, len(self.cluster.sentinels()), self.cluster.node_by_addr)
        return node.name if node else None

    def close(self):
        self.pool.shutdown(wait=False)


class VerdictWatch(Periodic):
    """Runs `dbcheck check BACKEND NODE` for every node every second (in parallel), recording
    each node's verdict line when it changes: changes {node: [(t, exit code, line)]}. HAProxy
    logs only an external check's exit code; this is where the reasons come from (the same
    binary and config, asked at about the same moments, not the very runs HAProxy made)."""

    def __init__(self, dbcheck, config, backend, nodes, place=()):
        """`place`: an argv prefix running each check where HAProxy runs (a NetLab host)."""
        super().__init__(f"verdicts-{backend}", 1.0, max_seconds=900)
        # As the owner of the check's password files (the user HAProxy runs checks as): dbcheck
        # reads a password file only as its owner.
        uid = password_owner(config)
        as_owner = [] if uid is None else ["setpriv", f"--reuid={uid}", f"--regid={pwd.getpwuid(uid).pw_gid}",
                                           "--clear-groups"]
        self.cmd = [*place, *as_owner, str(dbcheck), "--config", str(config), "check", backend]
        self.nodes = list(nodes)
        self.changes = {n: [] for n in self.nodes}
        self.pool = ThreadPoolExecutor(len(self.nodes), thread_name_prefix="verdict")

    def _one(self, node):
        try:
            res = subprocess.run(self.cmd + [node], capture_output=True, text=True, timeout=3,
                                 env={"PATH": "/usr/bin:/bin"})
            return res.returncode, (res.stdout or res.stderr).strip().splitlines()[-1:] or [""]
        except subprocess.TimeoutExpired:
            return None, ["no verdict within 3 s"]

    def tick(self):
        t = time.monotonic()
        for node, (rc, line) in zip(self.nodes, self.pool.map(self._one, self.nodes)):
            text = line[0]
            last = self.changes[node][-1] if self.changes[node] else None
            if last is None or (last[1], last[2]) != (rc, text):
                self.changes[node].append((t, rc, text))

    def finish(self):
        self.pool.shutdown(wait=False)

    def during(self, node, t_from, t_to):
        """The verdicts of `node` in force between t_from and t_to: the one before t_from and
        every change up to t_to."""
        ch = self.changes.get(node, [])
        before = [c for c in ch if c[0] <= t_from][-1:]
        return before + [c for c in ch if t_from < c[0] <= t_to]
