"""`dbcheck switchover`: a planned switchover through HAProxy (the shipped examples, dbcheck as
the check) with a writer sending numbered writes the whole time; every acknowledged write
must be on the new primary afterwards. Also the plan (--dry-run), the refusals, the operator
user's least privilege, and the aborts: a missed deadline, SIGTERM before and after SENTINEL
FAILOVER was accepted, none of which may leave two writable masters or a held write behind."""

import re
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from lab import redis as redis_fx
from lab.dbcheck import operator_lines, write_check_wrapper, write_dbcheck_config, write_redis_config
from lab.haproxy import render_example_for, render_redis_example_for
from lab.patroni import APP_DB, APP_PASSWORD, APP_USER, LOOP_WAIT
from lab.procs import wait_until
from lab.writers import PgWriter, RedisWriter


EXIT_INTERRUPTED, EXIT_LEFT_PAUSED = 9, 10


def switchover(dbcheck_bin, config, cluster, *args, timeout=90):
    return subprocess.run([str(dbcheck_bin), "--config", str(config), "switchover", cluster, *args],
                          capture_output=True, text=True, timeout=timeout, env={"PATH": "/usr/bin:/bin"})


def flat(text):
    """`text` with every run of white space made one space (progress lines pad the phase name)."""
    return " ".join(text.split())


class LiveSwitchover:
    """`dbcheck switchover` running in the background; its stdout lines collected as they come."""

    def __init__(self, dbcheck_bin, config, cluster, *args):
        self.proc = subprocess.Popen([str(dbcheck_bin), "--config", str(config), "switchover", cluster,
                                      *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={"PATH": "/usr/bin:/bin"})
        self.lines = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def wait_for_line(self, text, timeout):
        """Wait (bounded) until a line contains `text` (spaces collapsed); fail early if it exited."""
        def seen():
            if any(text in flat(line) for line in list(self.lines)):
                return True
            assert self.proc.poll() is None, f"dbcheck exited {self.proc.returncode}:\n{''.join(self.lines)}"
            return False
        wait_until(seen, timeout, f"dbcheck printing {text!r}")

    def finish(self, timeout=30):
        """Wait (bounded) for the exit; (exit code, stdout, stderr)."""
        rc = self.proc.wait(timeout)
        self._reader.join(5)
        return rc, "".join(self.lines), self.proc.stderr.read()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class WritableSampler(threading.Thread):
    """Every ~50 ms: the master a Sentinel majority names, then (after, on both data nodes at
    once) whether a write is accepted ("ok"), refused ("refused": a replica) or held ("held":
    no answer within 0.3 s, a paused master). samples: [(majority name or None, {node: result})].
    A held probe is dropped with its connection; one run later by an unpaused master is harmless."""

    def __init__(self, cluster):
        super().__init__(name="writable-sampler", daemon=True)
        self.cluster, self.samples = cluster, []
        self._halt = threading.Event()

    def probe(self, node):
        try:
            self.cluster.admin(node, "SET", "switchover-writable-probe", "1", timeout=0.3)
            return "ok"
        except redis_fx.RedisError:
            return "refused"
        except OSError:
            return "held"

    def run(self):
        nodes = self.cluster.nodes()
        with ThreadPoolExecutor(len(nodes)) as pool:
            while not self._halt.is_set():
                majority = self.cluster.master()
                results = dict(zip((n.name for n in nodes), pool.map(self.probe, nodes)))
                self.samples.append((majority.name if majority else None, results))
                self._halt.wait(0.05)

    def stop(self):
        self._halt.set()
        self.join(5)

    def violations(self, old):
        """Samples with two nodes accepting writes, or with `old` accepting one while the
        majority (read just before) named another master."""
        return [s for s in self.samples
                if list(s[1].values()).count("ok") > 1
                or (s[0] not in (None, old.name) and s[1][old.name] == "ok")]


def pause_ms(stdout):
    """The length of the CLIENT PAUSE that dbcheck printed (plan or progress)."""
    return int(re.search(r"CLIENT PAUSE (\d+) WRITE", stdout).group(1))


def check_user(cluster, node, state):
    """Turn the check user on or off on data node `node` (ACL SETUSER ... on|off)."""
    cluster.admin(node, "ACL", "SETUSER", redis_fx.HC_USER, state)


def writes_fast(cluster, node):
    """True when `node` answers a write (accepted, or refused as a replica): not paused. A
    paused master holds it past the 8 s timeout (OSError): every pause dbcheck sets lasts at
    least its deadline plus 10 s, and 8 s leaves a loaded machine room to answer."""
    try:
        cluster.admin(node, "SET", "after-abort", "1", timeout=8)
    except redis_fx.RedisError as err:
        assert "READONLY" in str(err), err
    return True


@pytest.fixture
def redis_setup(redis_cluster, dbcheck_bin, haproxy_factory, workdir):
    """HAProxy (redis-sentinel.cfg, dbcheck checks) in front of redis_cluster, and a dbcheck
    config whose cluster has the operator user. Namespace-like dict."""
    master = redis_cluster.wait_settled()
    extra = operator_lines(workdir / "operator", redis_fx.OPERATOR_USER, redis_fx.OPERATOR_PASSWORD)
    check_cfg = write_redis_config(workdir / "dbcheck", redis_cluster)
    op_cfg = write_redis_config(workdir / "dbcheck-op", redis_cluster, owner=None, cluster_extra=extra)
    wrapper = write_check_wrapper(workdir / "dbcheck" / "wrapper", dbcheck_bin, check_cfg)
    cfg, ports = render_redis_example_for(redis_cluster, wrapper, workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(cfg)
    wait_until(lambda: hap.servers_up("redis_write") == [master.name], 20, f"{master.name} alone UP")
    return {"master": master, "config": op_cfg, "hap": hap, "port": ports["redis_write"]}


def test_redis_dry_run_plans_and_changes_nothing(redis_cluster, redis_setup, dbcheck_bin):
    res = switchover(dbcheck_bin, redis_setup["config"], "cache", "--dry-run")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "plan (dry run, nothing changed):" in res.stdout, res.stdout
    # The pause covers what is left of the 60 s deadline plus the 10 s margin.
    assert 60_000 < pause_ms(res.stdout) <= 70_000, res.stdout
    assert redis_fx.OPERATOR_PASSWORD not in res.stdout + res.stderr
    assert redis_cluster.wait_stable() == redis_setup["master"]


def test_redis_refusals(redis_cluster, redis_setup, dbcheck_bin, workdir):
    no_operator = write_redis_config(workdir / "no-op", redis_cluster, owner=None)
    res = switchover(dbcheck_bin, no_operator, "cache")
    assert res.returncode == 3 and "operator_user" in res.stdout, res.stdout
    master = redis_setup["master"]
    res = switchover(dbcheck_bin, redis_setup["config"], "cache", "--to", master.addr)
    assert res.returncode == 3 and "is not a healthy replica" in res.stdout, res.stdout
    res = switchover(dbcheck_bin, redis_setup["config"], "nosuchcluster")
    assert res.returncode == 2, res.stdout


def test_redis_operator_user_can_pause_and_fail_over_only(redis_cluster):
    master = redis_cluster.wait_stable()
    op = dict(user=redis_fx.OPERATOR_USER, password=redis_fx.OPERATOR_PASSWORD)
    for cmd in (("SET", "k", "v"), ("GET", "k"), ("CONFIG", "SET", "maxmemory", "1"), ("FLUSHALL",),
                ("SHUTDOWN",), ("ACL", "SETUSER", "x")):
        with pytest.raises(Exception, match="NOPERM"):
            redis_cluster.command(master, *cmd, **op)
    s = redis_cluster.sentinels()[0]
    for cmd in (("SENTINEL", "SET", redis_fx.MASTER_NAME, "quorum", "1"),
                ("SENTINEL", "REMOVE", redis_fx.MASTER_NAME)):
        with pytest.raises(Exception, match="NOPERM"):
            redis_cluster.command(s, *cmd, **op)
    assert redis_cluster.command(master, "ROLE", **op)[0] == "master"


def test_redis_switchover_loses_no_acknowledged_write(redis_cluster, redis_setup, dbcheck_bin, figures):
    old = redis_setup["master"]
    key = f"switchover-proof-{time.monotonic_ns()}"
    writer = RedisWriter("sw", redis_setup["port"], key, "default", redis_fx.ADMIN_PASSWORD)
    writer.start()
    try:
        time.sleep(1)
        res = switchover(dbcheck_bin, redis_setup["config"], "cache")
        new = redis_cluster.wait_stable(30, not_master=old)
        wait_until(lambda: redis_setup["hap"].servers_up("redis_write") == [new.name], 20, f"{new.name} UP")
        time.sleep(1)
    finally:
        writer.stop()
    assert res.returncode == 0, res.stdout + res.stderr
    for phase in ("preflight", "pause", "request", "confirm", "demote", "unpause"):
        assert f"{phase} done:" in flat(res.stdout), (phase, res.stdout)
    stored = {int(x) for x in redis_cluster.admin(new, "LRANGE", key, 0, -1, timeout=5)}
    acked = [wid for _, wid, _ in writer.acks]
    lost = [wid for wid in acked if wid not in stored]
    assert len(acked) > 100 and lost == [], (len(acked), lost[:20])
    summary = res.stdout.strip().splitlines()[-1]
    figures("redis dbcheck switchover", f"{summary}; {len(acked)} writes acknowledged, 0 lost")


def test_redis_missed_deadline_after_failover_demotes_the_old_master(redis_cluster, redis_setup, dbcheck_bin):
    """A deadline shorter than Sentinel's switch (~1.1 s): the run fails while confirming, after
    SENTINEL FAILOVER was accepted. The old master must not be unpaused as a master: it is made
    a replica of the master the majority names, then unpaused (a paused one would hold the
    write below past its timeout)."""
    old = redis_setup["master"]
    new = next(n for n in redis_cluster.nodes() if n != old)
    # The new master cannot pass the writer check (the check user is off there): confirming
    # is impossible, not merely slow, whatever the Sentinels' speed on this run.
    check_user(redis_cluster, new, "off")
    try:
        res = switchover(dbcheck_bin, redis_setup["config"], "cache", "--timeout", "500ms")
    finally:
        check_user(redis_cluster, new, "on")
    out = flat(res.stdout)
    assert res.returncode == 6, res.stdout + res.stderr
    assert "confirm FAILED" in out and "demoted: a replica of " + new.addr in out, res.stdout
    assert "writes on it unpaused" in out, res.stdout
    assert redis_cluster.role(old)[:3] == ("slave", "127.0.0.1", new.port)
    assert writes_fast(redis_cluster, old)
    redis_cluster.wait_stable(60)


def test_redis_pause_outlives_the_deadline(redis_cluster, redis_setup, dbcheck_bin):
    """A --pause shorter than the deadline plus the release margin is refused before anything
    changes. With the default pause, a run whose new master cannot pass the writer check (the
    check user is off there) misses its 3 s deadline long after the Sentinel majority named the
    new master: the old master must stay paused past the deadline and never accept a write
    while the majority names another master, then be demoted, never unpaused as a master."""
    old = redis_setup["master"]
    new = next(n for n in redis_cluster.nodes() if n != old)
    res = switchover(dbcheck_bin, redis_setup["config"], "cache", "--timeout", "3s", "--pause", "12s")
    assert (res.returncode == 64
            and "--pause 12s is shorter than --timeout 3s plus the 10s margin" in res.stderr), \
        res.stdout + res.stderr
    assert redis_cluster.role(old) == ("master",) and writes_fast(redis_cluster, old)

    key = f"switchover-deadline-{time.monotonic_ns()}"
    writer = RedisWriter("sw-deadline", redis_setup["port"], key, "default", redis_fx.ADMIN_PASSWORD)
    sampler = WritableSampler(redis_cluster)
    writer.start()
    sampler.start()
    check_user(redis_cluster, new, "off")
    try:
        res = switchover(dbcheck_bin, redis_setup["config"], "cache", "--timeout", "3s")
    finally:
        check_user(redis_cluster, new, "on")
        sampler.stop()
    try:
        wait_until(lambda: redis_setup["hap"].servers_up("redis_write") == [new.name], 20, f"{new.name} UP")
        time.sleep(1)
    finally:
        writer.stop()
    out = flat(res.stdout)
    assert res.returncode == 6, res.stdout + res.stderr
    assert 10_000 < pause_ms(res.stdout) <= 13_000 and "demoted: a replica of " + new.addr in out, res.stdout
    assert redis_cluster.role(old)[:3] == ("slave", "127.0.0.1", new.port)
    assert sampler.violations(old) == [], sampler.violations(old)[:5]
    # The pause was what held the old master while the majority already named the new one.
    assert any(m == new.name and r[old.name] == "held" for m, r in sampler.samples), sampler.samples[-20:]
    stored = {int(x) for x in redis_cluster.admin(new, "LRANGE", key, 0, -1, timeout=5)}
    acked = [wid for _, wid, _ in writer.acks]
    lost = [wid for wid in acked if wid not in stored]
    assert len(acked) > 100 and lost == [], (len(acked), lost[:20])
    redis_cluster.wait_stable(60)


def test_redis_sigterm_before_failover_unpauses_the_old_master(redis_cluster, redis_setup, dbcheck_bin,
                                                               workdir):
    """SIGTERM while the run waits for a Sentinel to accept SENTINEL FAILOVER (this operator
    user may not send it: every Sentinel answers NOPERM, so the request phase keeps trying):
    the old master, paused by then, is unpaused and stays the master; exit 9."""
    old = redis_setup["master"]
    user = "op-nofailover"
    node_rules = redis_fx.operator_acl_line(redis_fx.OPERATOR_NODE_ACL).split()[2:]
    sentinel_rules = [r for r in redis_fx.operator_acl_line(redis_fx.OPERATOR_SENTINEL_ACL).split()[2:]
                      if r != "+sentinel|failover"]
    extra = operator_lines(workdir / "op-nofailover", user, redis_fx.OPERATOR_PASSWORD)
    cfg = write_redis_config(workdir / "dbcheck-nofailover", redis_cluster, owner=None, cluster_extra=extra)
    for n in redis_cluster.nodes():
        redis_cluster.admin(n, "ACL", "SETUSER", user, *node_rules)
    for s in redis_cluster.sentinels():
        redis_cluster.sentinel_admin(s, "ACL", "SETUSER", user, *sentinel_rules)
    live = LiveSwitchover(dbcheck_bin, cfg, "cache", "--timeout", "30s")
    try:
        live.wait_for_line("request waiting for:", 15)
        sampler = WritableSampler(redis_cluster)
        assert sampler.probe(old) == "held", "the old master is not paused during the request phase"
        live.proc.send_signal(signal.SIGTERM)
        rc, stdout, stderr = live.finish(30)
    finally:
        live.kill()
        for n in redis_cluster.nodes():
            redis_cluster.admin(n, "ACL", "DELUSER", user)
        for s in redis_cluster.sentinels():
            redis_cluster.sentinel_admin(s, "ACL", "DELUSER", user)
    out = flat(stdout)
    assert rc == EXIT_INTERRUPTED, stdout + stderr
    assert "INTERRUPTED in request" in out and "interrupted by SIGTERM" in out, stdout
    assert "still the master (SENTINEL FAILOVER was not sent)" in out and "unpaused" in out, stdout
    assert writes_fast(redis_cluster, old) and redis_cluster.role(old) == ("master",)
    assert redis_cluster.master() == old


def test_redis_sigterm_after_failover_demotes_the_old_master(redis_cluster, redis_setup, dbcheck_bin):
    """SIGTERM once SENTINEL FAILOVER was accepted and the majority names the new master (which
    cannot pass the writer check: the check user is off there, so the run is still confirming):
    the old master is made its replica, then unpaused; exit 9. No sample ever sees two writable
    masters, and no write acknowledged through HAProxy is lost."""
    old = redis_setup["master"]
    new = next(n for n in redis_cluster.nodes() if n != old)
    key = f"switchover-sigterm-{time.monotonic_ns()}"
    writer = RedisWriter("sw-sigterm", redis_setup["port"], key, "default", redis_fx.ADMIN_PASSWORD)
    sampler = WritableSampler(redis_cluster)
    writer.start()
    sampler.start()
    check_user(redis_cluster, new, "off")
    live = LiveSwitchover(dbcheck_bin, redis_setup["config"], "cache", "--timeout", "60s")
    try:
        live.wait_for_line("request done: accepted by", 20)
        wait_until(lambda: redis_cluster.master() == new, 20, f"the Sentinel majority naming {new.name}")
        live.proc.send_signal(signal.SIGTERM)
        rc, stdout, stderr = live.finish(30)
    finally:
        live.kill()
        check_user(redis_cluster, new, "on")
        sampler.stop()
    try:
        wait_until(lambda: redis_setup["hap"].servers_up("redis_write") == [new.name], 20, f"{new.name} UP")
        time.sleep(1)
    finally:
        writer.stop()
    out = flat(stdout)
    assert rc == EXIT_INTERRUPTED, stdout + stderr
    assert "INTERRUPTED in confirm" in out and "interrupted by SIGTERM" in out, stdout
    assert "demoted: a replica of " + new.addr in out and "writes on it unpaused" in out, stdout
    assert redis_cluster.role(old)[:3] == ("slave", "127.0.0.1", new.port)
    assert writes_fast(redis_cluster, old)
    assert sampler.violations(old) == [], sampler.violations(old)[:5]
    stored = {int(x) for x in redis_cluster.admin(new, "LRANGE", key, 0, -1, timeout=5)}
    acked = [wid for _, wid, _ in writer.acks]
    lost = [wid for wid in acked if wid not in stored]
    assert len(acked) > 100 and lost == [], (len(acked), lost[:20])
    redis_cluster.wait_stable(60)


def test_redis_left_paused_when_no_majority_names_a_new_master(redis_cluster, redis_setup, dbcheck_bin):
    """SIGTERM after SENTINEL FAILOVER was accepted, with the two Sentinels that did not take it
    frozen (SIGSTOP): no majority can name a new master, so the old master cannot be demoted and
    must not be unpaused; it is left paused, the output says so and what to do, exit 10. Then
    the operator's part, as the output says it: once the majority names the new master,
    REPLICAOF it and CLIENT UNPAUSE. No sample ever sees two writable masters."""
    old = redis_setup["master"]
    new = next(n for n in redis_cluster.nodes() if n != old)
    sampler = WritableSampler(redis_cluster)
    sampler.start()
    live = LiveSwitchover(dbcheck_bin, redis_setup["config"], "cache", "--timeout", "60s")
    frozen = []
    try:
        live.wait_for_line("request done: accepted by", 20)
        leader = re.search(r"accepted by (\S+)", "".join(live.lines)).group(1)
        frozen = [s for s in redis_cluster.sentinels() if s.addr != leader]
        for s in frozen:
            redis_cluster.sigstop(s)
        live.proc.send_signal(signal.SIGTERM)
        rc, stdout, stderr = live.finish(30)
        out = flat(stdout)
        assert rc == EXIT_LEFT_PAUSED, stdout + stderr
        assert "OPERATOR ACTION NEEDED" in out and f"{old.addr} LEFT PAUSED" in out, stdout
        assert f"then CLIENT UNPAUSE on {old.addr}" in out, stdout
        assert sampler.probe(old) == "held" and redis_cluster.role(old) == ("master",)
    finally:
        live.kill()
        for s in frozen:
            redis_cluster.sigcont(s)
    # The operator, as told: wait for the majority to name the new master, demote, unpause.
    wait_until(lambda: redis_cluster.master() == new, 30, f"the Sentinel majority naming {new.name}")
    redis_cluster.admin(old, "REPLICAOF", "127.0.0.1", new.port)
    redis_cluster.admin(old, "CLIENT", "UNPAUSE")
    assert writes_fast(redis_cluster, old)
    sampler.stop()
    assert sampler.violations(old) == [], sampler.violations(old)[:5]
    assert redis_cluster.wait_stable(60) == new


def test_redis_host_names_refused(redis_cluster, redis_setup, dbcheck_bin, workdir):
    """A Sentinel or --to given as a host name is refused in preflight, naming it; nothing changes."""
    old = redis_setup["master"]
    replica = next(n for n in redis_cluster.nodes() if n != old)
    s = redis_cluster.sentinels()
    extra = operator_lines(workdir / "op-hostname", redis_fx.OPERATOR_USER, redis_fx.OPERATOR_PASSWORD)
    cfg = write_redis_config(workdir / "dbcheck-hostname", redis_cluster, owner=None, cluster_extra=extra,
                             sentinels=[f"localhost:{s[0].port}", s[1].addr, s[2].addr])
    res = switchover(dbcheck_bin, cfg, "cache")
    assert res.returncode == 3, res.stdout + res.stderr
    assert f"sentinel localhost:{s[0].port} is a host name" in flat(res.stdout), res.stdout
    res = switchover(dbcheck_bin, redis_setup["config"], "cache", "--to", f"localhost:{replica.port}")
    assert res.returncode == 3, res.stdout + res.stderr
    assert f"--to localhost:{replica.port} is a host name" in flat(res.stdout), res.stdout
    assert redis_cluster.role(old) == ("master",) and writes_fast(redis_cluster, old)
    assert redis_cluster.master() == old


def test_pg_switchover_loses_no_acknowledged_write(pg_cluster, dbcheck_bin, haproxy_factory, workdir,
                                                   figures):
    old = pg_cluster.wait_healthy()
    check_cfg = write_dbcheck_config(workdir / "dbcheck", pg_cluster)
    op_cfg = write_dbcheck_config(workdir / "dbcheck-op", pg_cluster, owner=None)  # no REST auth here
    wrapper = write_check_wrapper(workdir / "dbcheck" / "wrapper", dbcheck_bin, check_cfg)
    cfg, ports = render_example_for(pg_cluster, wrapper, workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(cfg)
    wait_until(lambda: hap.servers_up("pg_write") == [old.name], 20, f"{old.name} alone UP")
    with pg_cluster.superuser_conn(old) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS switchover_proof (id bigint PRIMARY KEY)")
        cur.execute(f"ALTER TABLE switchover_proof OWNER TO {APP_USER}")
        cur.execute("TRUNCATE switchover_proof")
    target = pg_cluster.replicas()[0]
    dry = switchover(dbcheck_bin, op_cfg, "pg", "--dry-run", "--to", target.pg_addr)
    assert dry.returncode == 0 and f"candidate {target.name}" in dry.stdout, dry.stdout
    writer = PgWriter("sw", ports["pg_write"], "switchover_proof", APP_USER, APP_PASSWORD, APP_DB)
    writer.start()
    try:
        time.sleep(1)
        res = switchover(dbcheck_bin, op_cfg, "pg", "--to", target.pg_addr)
        wait_until(lambda: hap.servers_up("pg_write") == [target.name], 30, f"{target.name} UP")
        time.sleep(1)
    finally:
        writer.stop()
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"-> {target.pg_addr}" in res.stdout, res.stdout
    with pg_cluster.superuser_conn(target) as conn, conn.cursor() as cur:
        cur.execute("SELECT id FROM switchover_proof")
        stored = {r[0] for r in cur.fetchall()}
    acked = [wid for _, wid, _ in writer.acks]
    lost = [wid for wid in acked if wid not in stored]
    assert len(acked) > 100 and lost == [], (len(acked), lost[:20])
    figures("pg dbcheck switchover",
            f"{res.stdout.strip().splitlines()[-1]}; {len(acked)} writes acknowledged, 0 lost")
    pg_cluster.wait_healthy()


def test_pg_sigterm_stops_waiting_and_leaves_the_switchover_to_patroni(pg_cluster, dbcheck_bin, workdir):
    """SIGTERM while Patroni's POST /switchover is under way (Patroni answers it only once the
    new leader holds the lock, a second or more later): dbcheck stops waiting at once, exits 9,
    and says where things stand without undoing anything; the cluster then settles by itself."""
    old = pg_cluster.wait_healthy()
    op_cfg = write_dbcheck_config(workdir / "dbcheck-op", pg_cluster, owner=None)
    target = next(m for m in pg_cluster.replicas() if m != old)
    live = LiveSwitchover(dbcheck_bin, op_cfg, "pg", "--to", target.pg_addr)
    try:
        live.wait_for_line("request waiting for: Patroni accepting POST /switchover", 20)
        live.proc.send_signal(signal.SIGTERM)
        rc, stdout, stderr = live.finish(30)
    finally:
        live.kill()
    out = flat(stdout)
    assert rc == EXIT_INTERRUPTED, stdout + stderr
    assert ("INTERRUPTED in request" in out
            and "interrupted by SIGTERM after the switchover request was sent" in out), stdout
    assert ("it is not undone" in out
            and re.search(r"Patroni (still names|now names|names no leader)", out)), stdout
    assert "to do: see where the switchover went" in out, stdout
    # The request may reach Patroni as dbcheck exits, and Patroni records it in etcd a moment
    # later; once recorded, wait_healthy waits for the switchover to finish. The CI run of
    # a4b148d began the next test while pg1 was still being demoted.
    time.sleep(LOOP_WAIT)
    pg_cluster.wait_healthy(90)


def test_pg_operator_credentials_never_go_to_plain_http(pg_cluster, dbcheck_bin, workdir):
    """The operator's basic-auth credentials are refused for an http:// Patroni URL before a
    byte is sent: the request phase fails (exit 5) and the leader stays where it was."""
    old = pg_cluster.wait_healthy()
    extra = operator_lines(workdir / "operator", "patroni-operator", "0perator-pw")
    op_cfg = write_dbcheck_config(workdir / "dbcheck-op-http", pg_cluster, owner=None, cluster_extra=extra)
    target = next(m for m in pg_cluster.replicas() if m != old)
    res = switchover(dbcheck_bin, op_cfg, "pg", "--to", target.pg_addr)
    assert res.returncode == 5, res.stdout + res.stderr
    assert "refusing to send the operator's credentials over plain http://" in flat(res.stdout), res.stdout
    assert "0perator-pw" not in res.stdout + res.stderr
    assert pg_cluster.wait_healthy().name == old.name
