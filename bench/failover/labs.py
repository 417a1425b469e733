"""The failover proof's labs (bench/failover/failover.py): one real cluster per engine with the
six HAProxy configurations in front of it (bench/failover/variants.py), its agents, the faults
each scenario injects and undoes, and the waits for the cluster to settle. The partition labs
(bench/failover/partitions.py) place the same on hosts in network namespaces."""

import base64
import functools
import json
import os
import shutil
import signal
import subprocess
import urllib.request
from pathlib import Path

# The repository root (the lab package) is on PYTHONPATH: bench/failover/run and scripts/test source
# scripts/pythonpath, pytest reads setup.cfg; the modules beside this one are on sys.path as the
# script's own directory (pytest: the test module's).
import variants as V
import watches as W
from lab import dcs, faults, redis as redis_fx
from lab.agent import start_pg_agents, start_redis_agents
from lab.binaries import agent_bin, dbcheck_bin
from lab.dbcheck import operator_lines, write_check_wrapper, write_dbcheck_config, write_redis_config
from lab.haproxy import HAProxy
from lab.patroni import APP_DB, APP_PASSWORD, APP_USER, LOOP_WAIT, RETRY_TIMEOUT, SUPERUSER, TTL, \
    PatroniCluster
from lab.procs import wait_until
from lab.ca import issue, make_ca
from lab.writers import PgWriter, RedisWriter


REPO = Path(__file__).resolve().parents[2]
DBCHECK = dbcheck_bin()
AGENT = agent_bin()
OUT = REPO / "build" / "failover"
WARMUP, AFTER = 1.5, 2.0  # seconds of writes before the fault and after everything settled
HOLD = 4.0  # seconds the old primary stays away after the manager named a new one
# Seconds a fault that must not move the primary lasts: well past Sentinel's down-after (2 s
# here) plus a failover's start, and Patroni's retry_timeout (5 s) plus a loop.
STEADY_HOLD = 15.0
# Seconds the DCS stays down in the DCS-outage scenarios: past the leader key's TTL, plus the
# retry_timeout a member's DCS read may take and a loop, plus 3 s: long enough that without
# failsafe the leader has demoted itself and the key's lease would have expired, so what
# the checks do through a whole outage is measured, not only its first seconds.
DCS_HOLD = TTL + RETRY_TIMEOUT + LOOP_WAIT + 3.0
_http = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _signal(pid, sig):
    """os.kill that ignores a process gone meanwhile (a backend that was already exiting)."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


# ------------------------------------------------------------------ labs
class Lab:
    """What both engines' labs share: one HAProxy per variant, the agents, the cluster.
    `place`: the argv prefix that runs HAProxy and the clients' tools where the clients are
    (nothing on loopback; a NetLab host in bench/failover/partitions.py)."""

    place = ()
    # The read backend a lab measures (the partition labs cut a replica). None: the lab measures
    # writes only, and dbcheck's external check (c) runs the example's write backend alone, as
    # the anchors check only writes (docs/failover.md: what the read checks cost).
    read_backend = None
    steady = ()  # scenarios whose fault must not move the primary (held STEADY_HOLD s, then healed)
    # Scenarios held a fixed time whatever the manager does ({name: seconds}): the manager
    # itself is down, and may name the old primary again once back.
    held = {}
    # Scenarios run only when named (--scenario) or in the full proof (MEDIAN_MIN_RUNS runs or
    # more): each run is long, and the suite's short mode has no time for them.
    slow = ()
    # The window the gate compares: error_window_s (first failed write to the first on the new
    # primary), or kept_window_s, which also starts at the first acknowledged write that was lost
    # (the partition labs: an old primary that HAProxy can still reach acknowledges writes that
    # are then lost, which would make the check that keeps routing to it look fastest).
    window_field = "error_window_s"

    def window_rule(self, scenario, v):
        """How dbcheck configuration v's time without a writer is judged in `scenario`:
        ("window", None): its window against every anchor's (the failover scenarios);
        ("no_outage", None): no second without a kept write beyond the steadiest anchor's;
        ("recovery", [anchor keys]): the time from the heal to its first kept write, against
        those anchors' (they ask over the same path the fault cut)."""
        return ("window", None)

    def heal_all(self):
        """Undo every fault still in place (nothing here: the partition labs' cuts)."""

    def ready(self, scenario, old):
        """Wait (bounded) for what `scenario` needs beyond the writers' routing (nothing here)."""

    def reader_figures(self, v, h, ctx, run):
        """Figures about the read backend for a scenario that cut a replica ({} here: the
        partition labs measure them)."""
        return {}

    # The data nodes, through the lab protocol (lab/protocol.py) of self.cluster.
    def node_port(self, name):
        """The database port of node `name`."""
        return self.cluster.node(name).port

    def node_names(self):
        """The data nodes' names, in name order."""
        return [n.name for n in self.cluster.nodes()]

    def node_addrs(self):
        """{name: 'ip:port'} of every data node, as dbcheck and HAProxy are given it."""
        return {n.name: n.addr for n in self.cluster.nodes()}

    def start_haproxies(self):
        """Start one HAProxy per variant, each in its own directory."""
        for v in self.variants:
            self.haproxies[v.key] = HAProxy(self.workdir / v.key, v.cfg, place=self.place).start()

    def renew_incomplete_logs(self):
        """Restart, each with a new log, the HAProxies that dropped log lines (a dropped line
        poisons its log for every later run); returns their keys."""
        keys = [k for k, h in self.haproxies.items() if h.dropped_logs()]
        for k in keys:
            self.haproxies[k].restart_with_new_log()
        return keys

    def server_name(self, v, name):
        """Node `name` as variant v's HAProxy names the server."""
        return str(self.node_port(name)) if v.names_by_port else name

    def role_watches(self):
        """One started RoleWatch per data node: {name: RoleWatch}."""
        return {n: W.RoleWatch(n, self.role_probe(n)).start() for n in self.node_names()}

    def verdict_watch(self):
        """A started VerdictWatch of dbcheck's write backend over every data node."""
        return W.VerdictWatch(DBCHECK, self.check_config, self.write_backend, self.node_addrs().values(),
                              place=self.place).start()

    def stop(self):
        """Stop the HAProxies, the agents and the cluster (each by its PIDs); one that fails to
        stop does not keep the others running (the first error is raised after)."""
        errors = []
        for thing in [*self.haproxies.values(), *self.agents, self.cluster]:
            try:
                thing.stop()
            except Exception as exc:  # noqa: BLE001 - raised below, after the rest stopped
                errors.append(exc)
        if errors:
            raise errors[0]


class PgLab(Lab):
    """A Patroni cluster with the four PostgreSQL variants in front of it."""

    engine = "pg"
    write_backend = "pg_write"
    scenarios = ("switchover", "dbcheck-switchover", "freeze", "patroni-dies", "etcd-down",
                 "etcd-down-failsafe")
    # The DCS outage (etcd stopped DCS_HOLD s, then started again), without and with Patroni's
    # failsafe_mode. With it the leader must stay primary throughout (steady); without it, it
    # demotes itself after retry_timeout and a leader comes back with etcd, most often the same.
    steady = ("etcd-down-failsafe",)
    held = {"etcd-down": DCS_HOLD, "etcd-down-failsafe": DCS_HOLD}
    slow = ("etcd-down", "etcd-down-failsafe")

    def __init__(self, workdir):
        self.workdir = workdir
        self.cluster = PatroniCluster(workdir / "cluster")
        self.haproxies, self.agents, self.variants = {}, [], []
        self.repairs = []  # members re-initialised by settle()
        self.failsafe = False  # failsafe_mode in the cluster's dynamic configuration (off at bootstrap)

    def window_rule(self, scenario, v):
        """In the DCS-outage scenarios ('dcs'), dbcheck configuration v's time without a kept
        write against Patroni's own GET /primary at v's settings (bench/failover/gates.py,
        dcs_run_failures): the check a user turns to when the DCS is down; elsewhere 'window'."""
        if scenario in self.held:
            return ("dcs", [a.key for a in V.anchors_of(self.variants, v) if a.key.startswith("a")])
        return super().window_rule(scenario, v)

    def ready(self, scenario, old):
        """failsafe_mode as `scenario` needs it: on for etcd-down-failsafe, off for every other
        scenario (changed only when it is not already so; bounded waits, lab/dcs.py)."""
        want = scenario == "etcd-down-failsafe"
        if want != self.failsafe:
            dcs.set_failsafe(self.cluster, want)
            self.failsafe = want

    def start(self):
        self.cluster.start()
        # At the product's defaults, shared views included.
        self.check_config = write_dbcheck_config(self.workdir / "dbcheck", self.cluster, share=True)
        wrapper = write_check_wrapper(self.workdir / "dbcheck" / "dbcheck-wrapper", DBCHECK,
                                      self.check_config)
        # `dbcheck switchover` runs as the operator (root here), from its own config.
        self.op_config = write_dbcheck_config(self.workdir / "dbcheck-op", self.cluster, owner=None)
        self.agents = start_pg_agents(self.workdir / "agents", self.cluster, AGENT)
        self.variants = V.pg_variants(self.cluster, self.workdir, wrapper, self.agents,
                                      readers=self.read_backend is not None)
        self.start_haproxies()
        with self.cluster.superuser_conn(self.cluster.wait_primary()) as conn, conn.cursor() as cur:
            for v in self.variants:
                cur.execute(f"CREATE TABLE IF NOT EXISTS proof_{v.key} (id bigint PRIMARY KEY)")
                cur.execute(f"ALTER TABLE proof_{v.key} OWNER TO {APP_USER}")
        return self

    def primary(self):
        """The leader key in etcd (etcd v3 JSON gateway): the member name, or None."""
        key = f"/service/{self.cluster.scope}/leader".encode()
        req = urllib.request.Request(f"http://{self.cluster.etcd_ip}:{self.cluster.etcd_port}/v3/kv/range",
                                     data=json.dumps({"key": base64.b64encode(key).decode()}).encode())
        with _http.open(req, timeout=0.5) as resp:
            kvs = json.loads(resp.read()).get("kvs") or []
        return base64.b64decode(kvs[0]["value"]).decode() if kvs else None

    def role_probe(self, name):
        """pg_is_in_recovery() of member `name` over the unix socket, as the superuser."""
        return W.PgRole(dict(host=str(self.cluster.socket_dir), port=self.node_port(name), user=SUPERUSER,
                             dbname=APP_DB, application_name="proof-role"))

    def settle(self, not_master=None):
        """The leader once every member streams from it (`not_master` is not enforced: Patroni
        may rightly hand leadership back to the old leader, see docs/failover.md). A member left
        on a timeline the leader does not have (after the manager took the key back from it;
        Patroni 3.0.2 does not always rewind it) is re-initialised from the leader, as an
        operator would, and noted in self.repairs."""
        try:
            return self.cluster.wait_healthy(60).name
        except AssertionError:
            leader = self.cluster.leader()
            if leader is None:
                raise
            stuck = [m.name for m in self.cluster.members()
                     if m != leader and m.name not in self.cluster.streaming_replicas(leader)]
            for name in stuck:
                self.cluster.patronictl("reinit", self.cluster.scope, name, "--force", "--wait", timeout=180)
            self.repairs += stuck
            return self.cluster.wait_healthy(120).name

    def make_first_primary(self):
        """Switch over to pg1 (listed first in every variant) unless it leads already."""
        first, leader = self.cluster.nodes()[0], self.cluster.node(self.settle())
        if leader != first:
            self.cluster.switchover(first.name, leader=leader.name)
            wait_until(lambda: self.cluster.wait_healthy(120) == first, 120, f"{first.name} leading")

    def prepare(self, v):
        with self.cluster.superuser_conn(self.cluster.primary()) as conn, conn.cursor() as cur:
            cur.execute(f"TRUNCATE proof_{v.key}")

    def writer(self, v):
        return PgWriter(v.key, v.write_port, f"proof_{v.key}", APP_USER, APP_PASSWORD, APP_DB)

    def stored(self, v, primary):
        with self.cluster.superuser_conn(primary) as conn, conn.cursor() as cur:
            cur.execute(f"SELECT id FROM proof_{v.key}")
            return {r[0] for r in cur.fetchall()}

    def inject(self, scenario, old, run):
        """Start the fault; returns a callable bringing the old primary back (or None)."""
        m = self.cluster.node(old)
        if scenario == "switchover":
            candidate = self.cluster.replicas(m)[0]
            self.cluster.switchover(candidate.name, leader=old)
            return None
        if scenario == "dbcheck-switchover":
            candidate = self.cluster.replicas(m)[0]
            run["switchover"] = dbcheck_switchover(self.op_config, "pg", "--to", candidate.pg_addr)
            return None
        if scenario == "freeze":
            pids = self.cluster.member_pids(m)
            for pid in pids:
                _signal(pid, signal.SIGSTOP)
            run["frozen_pids"] = len(pids)
            return lambda: [_signal(pid, signal.SIGCONT) for pid in reversed(pids)]
        if scenario == "patroni-dies":
            self.cluster.kill_patroni(m)
            return lambda: self.cluster.start_patroni(m)
        if scenario in ("etcd-down", "etcd-down-failsafe"):
            run["failsafe_mode"] = self.failsafe
            faults.stop_etcd(self.cluster)

            def back():
                # What the old leader's Patroni says of itself just before etcd returns.
                run["failsafe_active_at_heal"] = dcs.is_failsafe_active(self.cluster, m)
                faults.start_etcd(self.cluster)
            return back
        raise ValueError(scenario)


class LabTls:
    """TLS everywhere in a Redis lab, from a throwaway CA in `directory`: the certificate every
    node and Sentinel serves and presents to its peers (`files`, read by redis), dbcheck's
    client certificate (its key owned by haproxy, the user external checks run as; the agents
    and the operator run as root), and HAProxy's own, which it presents to the nodes."""

    def __init__(self, directory):
        directory = Path(directory)
        ca = make_ca(directory, "lab")
        server = issue(ca, directory, "redis", ["IP:127.0.0.1", "DNS:localhost"], client="both")
        client = issue(ca, directory, "dbcheck", ["DNS:localhost"], client=True)
        proxy = issue(ca, directory, "haproxy", ["DNS:localhost"], client=True)
        directory.chmod(0o755)
        for f in (server.cert, server.key):
            shutil.chown(f, "redis", "redis")
        shutil.chown(client.key, "haproxy", "haproxy")
        # HAProxy's `crt` wants the certificate and its key in one file (read as root at start).
        pem = directory / "haproxy-client.pem"
        pem.write_text(proxy.cert.read_text() + proxy.key.read_text())
        pem.chmod(0o600)
        self.files = redis_fx.TlsFiles(ca.cert, server.cert, server.key)
        # [cluster] lines of every dbcheck config: TLS to the nodes and to the Sentinels, and
        # require_tls so that a plain link is a configuration error rather than a quiet fallback.
        self.dbcheck_lines = "\n".join(
            f'{prefix}tls = true\n{prefix}tls_ca_cert_file = "{ca.cert}"\n'
            f'{prefix}tls_cert_file = "{client.cert}"\n{prefix}tls_key_file = "{client.key}"'
            for prefix in ("", "sentinel_")) + "\nrequire_tls = true"
        # What every HAProxy server line gets: TLS to the node, its certificate verified
        # against the lab CA, HAProxy's client certificate presented (tls-auth-clients yes).
        self.haproxy_server = f"ssl verify required ca-file {ca.cert} crt {pem}"


class RedisLab(Lab):
    """Two Redis nodes and three Sentinels with the four Redis variants in front of them; with
    `tls`, every node and Sentinel takes TLS only and everything that reaches them speaks it
    (LabTls), except the writers, which reach HAProxy in plain TCP as before."""

    engine = "redis"
    write_backend = "redis_write"
    scenarios = ("failover", "dbcheck-switchover", "freeze", "failover+fencing", "freeze+fencing")

    def __init__(self, workdir, tls=False):
        self.workdir = workdir
        self.tls = LabTls(workdir / "certs") if tls else None
        self.cluster = redis_fx.RedisSentinelCluster(workdir / "cluster", tls=self.tls and self.tls.files)
        self.haproxies, self.agents, self.variants = {}, [], []
        self.repairs = []

    def start(self):
        self.cluster.start()
        tls_lines = self.tls.dbcheck_lines if self.tls else ""
        self.check_config = write_redis_config(self.workdir / "dbcheck", self.cluster,
                                               cluster_extra=tls_lines)
        wrapper = write_check_wrapper(self.workdir / "dbcheck" / "dbcheck-wrapper", DBCHECK,
                                      self.check_config)
        operator = operator_lines(self.workdir / "operator", redis_fx.OPERATOR_USER,
                                  redis_fx.OPERATOR_PASSWORD)
        self.op_config = write_redis_config(self.workdir / "dbcheck-op", self.cluster, owner=None,
                                            cluster_extra="\n".join(x for x in (tls_lines, operator) if x))
        self.agents = start_redis_agents(self.workdir / "agents", self.cluster, AGENT,
                                         cluster_extra=tls_lines)
        self.variants = V.redis_variants(self.cluster, self.workdir, wrapper, self.agents,
                                         tls=self.tls and self.tls.haproxy_server,
                                         readers=self.read_backend is not None)
        self.start_haproxies()
        # The Sentinels asked as dbcheck asks them: over TLS where they take nothing else.
        ask = functools.partial(redis_fx.redis_pipeline,
                                tls=self.cluster.tls and self.cluster.tls.client_context())
        self.sentinels = W.SentinelManager(self.cluster, redis_fx.MASTER_NAME, ask,
                                           dict(user="default", password=redis_fx.SENTINEL_ADMIN_PASSWORD))
        return self

    def primary(self):
        """The master a strict majority of the Sentinels names by dbcheck's own rule, or None."""
        return self.sentinels()

    def stop(self):
        if getattr(self, "sentinels", None):
            self.sentinels.close()
        super().stop()

    def role_probe(self, name):
        """ROLE of data node `name` (a new connection each time, as the admin user)."""
        node = self.cluster.node(name)
        return lambda: (W.PRIMARY if self.cluster.role(node, timeout=W.ROLE_TIMEOUT)[0] == "master"
                        else W.REPLICA)

    def settle(self, not_master=None):
        return self.cluster.wait_stable(60, not_master=not_master).name

    def make_first_primary(self):
        """Fail over to redis1 (listed first in every variant) unless it is the master; then
        wait until every Sentinel lists the replica as healthy (a failover needs one)."""
        first, master = self.cluster.nodes()[0], self.cluster.wait_primary(60)
        if master != first:
            self.fencing(False)
            self.cluster.failover(timeout=45)  # a failover back after fencing can take longer than 15 s
            self.cluster.wait_stable(60, not_master=master)
        self.cluster.wait_settled(60)

    def prepare(self, v):
        self.cluster.admin(self.cluster.wait_primary(), "DEL", f"proof:{v.key}")

    def writer(self, v):
        return RedisWriter(v.key, v.write_port, f"proof:{v.key}", "default", redis_fx.ADMIN_PASSWORD,
                           port_setting="tls-port" if self.tls else "port")

    def stored(self, v, primary):
        return {int(x) for x in self.cluster.admin(primary, "LRANGE", f"proof:{v.key}", 0, -1, timeout=5)}

    def fencing(self, on):
        """min-replicas-to-write 1 + min-replicas-max-lag 1 on every node (or back to off)."""
        for n in self.cluster.nodes():
            self.cluster.admin(n, "CONFIG", "SET", "min-replicas-to-write", 1 if on else 0,
                               "min-replicas-max-lag", 1 if on else 10)

    def inject(self, scenario, old, run):
        self.fencing(scenario.endswith("+fencing"))
        if scenario == "dbcheck-switchover":
            run["switchover"] = dbcheck_switchover(self.op_config, "cache")
            return None
        if scenario.startswith("failover"):
            self.cluster.failover(wait=False)
            return None
        if scenario.startswith("freeze"):
            self.cluster.sigstop(old)
            return lambda: self.cluster.sigcont(old)
        raise ValueError(scenario)


def dbcheck_switchover(config, cluster, *args):
    """Run `dbcheck switchover` to completion; its summary line, or RuntimeError with its output."""
    res = subprocess.run([str(DBCHECK), "--config", str(config), "switchover", cluster, *args],
                         capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    if res.returncode != 0:
        raise RuntimeError(f"dbcheck switchover exited {res.returncode}:\n{res.stdout}{res.stderr}")
    return res.stdout.strip().splitlines()[-1]


# ------------------------------------------------------------------ one run
