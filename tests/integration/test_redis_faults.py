"""Fault cases for the Redis/Sentinel check against real servers, and fake peers where a real
one cannot be made to lie: each fails closed, in time, with a reason."""

import time
from pathlib import Path

import pytest

from lab.dbcheck import assert_in_time, explain, run_dbcheck, write_redis_config
from lab.fake_resp import FakeResp
from lab.ports import free_ports
from lab.procs import wait_until
from lab.redis import HC_PASSWORD, HC_USER, RedisSentinelCluster

TIMEOUT = 0.8
MARGIN = 0.1


@pytest.fixture
def redis_config(workdir, redis_cluster):
    """redis_config(name, **kw) -> a dbcheck.toml for redis_cluster (password files owned by root)."""
    def make(name, **kw):
        return write_redis_config(workdir / name, redis_cluster, owner=None, **kw)
    return make


def test_sentinel_minority_is_outvoted(redis_cluster, dbcheck_bin, redis_config, figures):
    """One of three configured Sentinels names another master at an older epoch (it has not
    caught up): the majority decides. At a newer epoch (a failover the others have not heard
    of yet): the writer goes, whatever the count. Two of three naming another master: the real
    master fails closed."""
    master = redis_cluster.wait_stable()
    replica = next(n for n in redis_cluster.nodes() if n != master)
    real = [s.addr for s in redis_cluster.sentinels()]
    with FakeResp("sentinel", master=replica.addr, epoch=0) as stale, \
            FakeResp("sentinel", master=replica.addr) as liar1, \
            FakeResp("sentinel", master=replica.addr) as liar2:
        one_stale = redis_config("one-stale", sentinels=[real[0], real[1], stale.addr])
        one_liar = redis_config("one-liar", sentinels=[real[0], real[1], liar1.addr])
        two_liars = redis_config("two-liars", sentinels=[real[0], liar1.addr, liar2.addr])
        ok = explain(dbcheck_bin, one_stale, "redis_write", master.addr)
        not_replica = explain(dbcheck_bin, one_stale, "redis_write", replica.addr)
        newer = explain(dbcheck_bin, one_liar, "redis_write", master.addr)
        outvoted = explain(dbcheck_bin, two_liars, "redis_write", master.addr)
        liars_pick = explain(dbcheck_bin, two_liars, "redis_write", replica.addr)
    assert ok.rc == 0 and ok.reason.startswith("2 of 3 Sentinels name this node master"), ok
    assert not_replica.rc == 1, not_replica
    assert newer.rc == 1 and newer.failure == "role", newer
    assert (f"Sentinel {liar1.addr} already names another master at a newer config epoch"
            in newer.reason), newer
    assert outvoted.rc == 1 and outvoted.failure == "role", outvoted
    assert f"names {replica.addr} (epoch 99, flags master)" in outvoted.reason, outvoted
    # The liars' choice is a replica by its own ROLE: the node's opinion vetoes it.
    assert liars_pick.rc == 1 and "Redis ROLE says replica" in liars_pick.reason, liars_pick
    figures("redis Sentinel disagreement", f"1 of 3 dissenting: UP ({ok.reason[:60]}...); 2 of 3 "
            f"dissenting: DOWN ({outvoted.reason[:70]}...)")


def test_restarted_stale_sentinel_is_outvoted(workdir, dbcheck_bin):
    """A Sentinel stopped before a failover knows only the old master when it comes back.
    A private cluster: a restarted Sentinel can later race the others in a failover (it may
    convert a freshly promoted master at once), which must not disturb the shared one."""
    with RedisSentinelCluster(workdir / "redis") as cluster:
        old = cluster.wait_stable()
        config = write_redis_config(workdir / "dbcheck", cluster, owner=None)
        stale = cluster.sentinels()[2]
        cluster.stop_sentinel(stale)
        new = cluster.failover(sentinel=cluster.sentinels()[0])
        cluster.start_sentinel(stale)
        stale_view = cluster.sentinel_masters()[stale.name]
        run_new = explain(dbcheck_bin, config, "redis_write", new.addr)
        run_old = explain(dbcheck_bin, config, "redis_write", old.addr)
    assert run_new.rc == 0, run_new  # 2 of 3 configured, whatever the third says
    assert run_old.rc == 1, run_old
    assert stale_view in (old.addr, new.addr, None)


@pytest.mark.parametrize("how", ["refused", "frozen"])
def test_all_sentinels_unusable_fails_closed_in_time(redis_cluster, dbcheck_bin, redis_config, how):
    master = redis_cluster.wait_stable()
    if how == "refused":
        config = redis_config("refused", sentinels=[f"127.0.0.1:{p}" for p in free_ports(3)])
        run = explain(dbcheck_bin, config, "redis_write", master.addr)
    else:
        config = redis_config("frozen")
        for s in redis_cluster.sentinels():
            redis_cluster.sigstop(s)
        try:
            run = explain(dbcheck_bin, config, "redis_write", master.addr)
        finally:
            for s in redis_cluster.sentinels():
                redis_cluster.sigcont(s)
    assert run.rc == 1, run
    assert run.failure == ("network" if how == "refused" else "timeout"), run
    first = "cannot reach Sentinels: " if how == "refused" else "Sentinels timed out: "
    assert run.reason.startswith(first + "0 of 3 name this node master"), run
    assert_in_time(run, TIMEOUT, MARGIN)


def test_wedged_node_and_trickling_peers_end_in_time(redis_cluster, dbcheck_bin, redis_config, figures):
    master = redis_cluster.wait_stable()
    replica = next(n for n in redis_cluster.nodes() if n != master)
    config = redis_config("ok")
    times = []
    redis_cluster.sigstop(replica)
    try:
        for backend in ("redis_write", "redis_read"):
            run = explain(dbcheck_bin, config, backend, replica.addr)
            times.append(run.elapsed)
            # As a writer the Sentinels name the other node: "not this node" wins (role).
            expected = "role" if backend == "redis_write" else "timeout"
            assert run.rc == 1 and run.failure == expected, run
            assert "Redis timed out: no answer before the deadline" in run.reason, run
            assert_in_time(run, TIMEOUT, MARGIN)
    finally:
        redis_cluster.sigcont(replica)
    with FakeResp("trickle") as t1, FakeResp("trickle") as t2, FakeResp("trickle") as t3, \
            FakeResp("trickle") as node:
        trickle = redis_config("trickle", sentinels=[t1.addr, t2.addr, t3.addr])
        for backend in ("redis_write", "redis_read"):
            run = explain(dbcheck_bin, trickle, backend, node.addr)
            times.append(run.elapsed)
            assert run.rc == 1 and run.failure == "timeout", run
            assert_in_time(run, TIMEOUT, MARGIN)
    figures("redis wedged node / trickling peers", f"checks ended in {min(times) * 1000:.0f}-"
            f"{max(times) * 1000:.0f} ms (timeout 800 ms), failing with timeout")


# Spins the server's one thread for ARGV[1] microseconds: every client waits meanwhile, as on an
# overloaded node. A read-only script, so a replica runs it too.
# A read-only script that spins ARGV[1] empty loops. Not timed with TIME: from Redis 7.2 on,
# a script sees the time frozen at its start, and such a loop would never end.
BUSY_SCRIPT = "for i = 1, tonumber(ARGV[1]) do end return 1"


def _loops_for(redis_cluster, node, seconds):
    """How many BUSY_SCRIPT loops keep `node` busy about `seconds`, measured on it now."""
    probe = 2_000_000
    t0 = time.monotonic()
    redis_cluster.admin(node, "EVAL_RO", BUSY_SCRIPT, "0", str(probe), timeout=10.0)
    return max(probe, int(probe * seconds / max(time.monotonic() - t0, 1e-3)))


def _explain_while_busy(redis_cluster, dbcheck_bin, config, backend, node, busy_s=0.8):
    """Blocks `node` with BUSY_SCRIPT for about `busy_s`, and once it no longer answers PING,
    checks it; the script is killed if it is still running afterwards."""
    import threading

    loops = _loops_for(redis_cluster, node, busy_s)
    blocker = threading.Thread(target=redis_cluster.admin,
                               args=(node, "EVAL_RO", BUSY_SCRIPT, "0", str(loops)),
                               kwargs={"timeout": 10.0})
    blocker.start()
    try:
        def busy():
            try:
                redis_cluster.admin(node, "PING", timeout=0.05)
                return False
            except OSError:
                return True
        wait_until(busy, timeout=2, what=f"{node.name} busy in its script")
        return explain(dbcheck_bin, config, backend, node.addr)
    finally:
        blocker.join(5)
        if blocker.is_alive():
            redis_cluster.admin(node, "SCRIPT", "KILL", timeout=2.0)
            blocker.join(5)


def _slow_run(redis_cluster, dbcheck_bin, config, backend, node, node_ms):
    """A check of `node` whose own node step (by the check's clock) took over 300 ms behind a
    busy script. Where the script ran out before the check reached the node (a busy machine
    starts the check late), the check must not say slow, and the node is kept busy longer (well
    inside the 3 s deadline, which a loaded machine's longer script must not reach)."""
    for busy_s in (0.8, 1.2, 1.6):
        run = _explain_while_busy(redis_cluster, dbcheck_bin, config, backend, node, busy_s)
        if node_ms(run) > 300:
            return run
        assert run.failure != "slow", run  # the rule judges the node step it reports
    raise AssertionError(f"{node.name} never answered {backend}'s check slowly: {run}")


def test_slow_node_reader_out_writer_degraded(redis_cluster, dbcheck_bin, redis_config, figures):
    """max_latency 300ms: a node whose own answer waits ~0.7 s behind a busy script is a slow
    replica (down) and a slow but passing master (up, failure slow); fast, both pass plainly.
    The time judged is the node step's, which the check itself reports."""
    master = redis_cluster.wait_stable()
    replica = next(n for n in redis_cluster.nodes() if n != master)
    config = redis_config("slow", timeout="3s", extra="""max_latency = "300ms"

[backend.redis_write_slow]
cluster = "cache"
role = "primary"
max_latency = "300ms"
""")

    def node_ms(run):
        return next(s["latency_ms"] for s in run.report["steps"] if s["opinion"] == "node")

    listed = run_dbcheck(dbcheck_bin, config, "config-check")
    assert listed.rc == 0, listed
    assert "backend redis_read: cluster cache, role replica, timeout 3s, max_lag 2s, max_latency 300ms" \
        in listed.stdout, listed.stdout

    fast_reader = explain(dbcheck_bin, config, "redis_read", replica.addr)
    fast_writer = explain(dbcheck_bin, config, "redis_write_slow", master.addr)
    assert fast_reader.rc == 0 and fast_reader.failure == "none", fast_reader
    assert fast_writer.rc == 0 and fast_writer.failure == "none", fast_writer
    assert node_ms(fast_reader) < 300 and node_ms(fast_writer) < 300

    reader = _slow_run(redis_cluster, dbcheck_bin, config, "redis_read", replica, node_ms)
    writer = _slow_run(redis_cluster, dbcheck_bin, config, "redis_write_slow", master, node_ms)
    assert reader.rc == 1 and reader.state == "down" and reader.failure == "slow", reader
    assert reader.reason.startswith("slow: the node answered in "), reader
    assert "max_latency 300 ms (" in reader.reason, reader
    assert node_ms(reader) > 300, reader.report["steps"]
    assert writer.rc == 0 and writer.state == "up" and writer.failure == "slow", writer
    assert writer.reason.startswith("slow: the node answered in "), writer
    assert "max_latency 300 ms (" in writer.reason, writer
    assert node_ms(writer) > 300, writer.report["steps"]
    for run in (reader, writer):
        assert_in_time(run, 3.0, MARGIN)
    redis_cluster.wait_stable()
    figures("redis slow node (max_latency 300 ms)",
            f"replica node step {node_ms(reader):.0f} ms: DOWN/slow; master {node_ms(writer):.0f} "
            f"ms: UP/slow; fast: {node_ms(fast_reader):.1f} / {node_ms(fast_writer):.1f} ms")


def test_wrong_password_and_acl_denial(redis_cluster, dbcheck_bin, redis_config):
    master = redis_cluster.wait_stable()
    secret = "wrong-Redis-4711"
    config = redis_config("badpw", password=secret)
    for args in (("check", "redis_write", master.addr), ("explain", "redis_write", master.addr, "--json")):
        run = run_dbcheck(dbcheck_bin, config, *args)
        assert run.rc == 1, run
        assert "WRONGPASS" in run.stdout, run
        assert secret not in run.stdout + run.stderr
    # A user that may PING but not ROLE: the ACL denial names the command.
    for node in redis_cluster.nodes():
        redis_cluster.admin(node, "ACL", "SETUSER", "pingonly", "on", ">pingonly-pw", "-@all", "+ping")
    denied = explain(dbcheck_bin, redis_config("acl", user="pingonly", password="pingonly-pw"),
                     "redis_write", master.addr)
    assert denied.rc == 1 and denied.failure == "auth", denied
    assert "NOPERM" in denied.reason and "role" in denied.reason, denied
    assert_in_time(denied, TIMEOUT, MARGIN)


def test_shipped_acl_cannot_write(redis_cluster):
    """The check user from docs/redis/*-acl.conf can do nothing but what dbcheck needs."""
    master = redis_cluster.wait_stable()
    for cmd in (("SET", "k", "v"), ("GET", "k"), ("CONFIG", "GET", "maxmemory"), ("FLUSHALL",)):
        with pytest.raises(Exception, match="NOPERM"):
            redis_cluster.hc(master, *cmd)
    s = redis_cluster.sentinels()[0]
    for cmd in (("SENTINEL", "FAILOVER", "x"), ("SENTINEL", "SET", "x", "quorum", "1")):
        with pytest.raises(Exception, match="NOPERM"):
            redis_cluster.hc(s, *cmd)
    assert redis_cluster.hc(master, "ROLE")[0] == "master"


def test_a_master_that_refuses_commands_is_not_called_not_the_writer(redis_cluster, dbcheck_bin,
                                                                     redis_config, figures):
    """The master cannot persist (a BGSAVE failed while `save` is set): Redis refuses writes and
    PING with MISCONF. It is still the master every Sentinel names: the writer is down as
    unwritable, and the reason says the master refuses writes, not that it is not the writer."""
    master = redis_cluster.wait_stable()
    config = redis_config("misconf")
    dump = Path(redis_cluster.admin(master, "CONFIG", "GET", "dir")[1]) / \
        redis_cluster.admin(master, "CONFIG", "GET", "dbfilename")[1]
    aside = dump.with_name(dump.name + ".aside")
    had_dump = dump.exists()
    if had_dump:
        dump.rename(aside)
    (dump / "keep").mkdir(parents=True)  # the finished snapshot cannot replace a non-empty directory
    try:
        redis_cluster.admin(master, "CONFIG", "SET", "save", "3600 1")
        redis_cluster.admin(master, "BGSAVE")
        wait_until(lambda: "rdb_last_bgsave_status:err" in redis_cluster.admin(master, "INFO", "persistence"),
                   10, "the BGSAVE failed")
        run = explain(dbcheck_bin, config, "redis_write", master.addr)
    finally:
        redis_cluster.admin(master, "CONFIG", "SET", "save", "")
        (dump / "keep").rmdir()
        dump.rmdir()
        if had_dump:
            aside.rename(dump)
        redis_cluster.admin(master, "BGSAVE")  # leaves no failed snapshot behind for later tests
        wait_until(lambda: "rdb_last_bgsave_status:ok" in redis_cluster.admin(master, "INFO", "persistence"),
                   10, "a BGSAVE that succeeds")
    assert run.rc == 1 and run.failure == "unwritable", run
    assert run.reason.startswith("Redis ROLE says master but it refuses writes: MISCONF"), run
    assert "3 of 3 Sentinels name this node master" in run.reason, run
    assert_in_time(run, TIMEOUT, MARGIN)
    figures("redis master refusing PING (MISCONF)", f"writer DOWN ({run.failure}): {run.reason[:110]}")


def lpushx_calls(cluster, node):
    """LPUSHX commands `node` has run, those its master replicated to it included."""
    for line in cluster.admin(node, "INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_lpushx:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


def test_a_master_that_refuses_writes_is_unwritable(redis_cluster, dbcheck_bin, redis_config, figures):
    """maxmemory reached under noeviction (OOM) and min-replicas-to-write unmet (NOREPLICAS):
    ROLE says master and every Sentinel names it, yet every write fails. The writer check's
    write probe (LPUSHX on an absent key) is refused the same way: down, class unwritable. The
    probe itself stores and replicates nothing."""
    master = redis_cluster.wait_stable()
    config = redis_config("unwritable")
    replicas = [n for n in redis_cluster.nodes() if n != master]
    ran = lpushx_calls(redis_cluster, master)
    seen = {n.name: lpushx_calls(redis_cluster, n) for n in replicas}
    for _ in range(20):
        ok = explain(dbcheck_bin, config, "redis_write", master.addr)
        assert ok.rc == 0 and ok.reason.endswith("Redis ROLE says master and it accepts writes"), ok
    assert lpushx_calls(redis_cluster, master) - ran >= 20  # every check sent its probe
    # One LPUSHX that does write, after the probes: it reaches each replica behind anything they
    # sent, so once it has, a replica that ran no more than it ran no probe.
    redis_cluster.admin(master, "RPUSH", "dbcheck-test:control", "x")
    redis_cluster.admin(master, "LPUSHX", "dbcheck-test:control", "y")
    redis_cluster.admin(master, "DEL", "dbcheck-test:control")
    for n in replicas:
        wait_until(lambda n=n: lpushx_calls(redis_cluster, n) > seen[n.name], 10,
                   f"{n.name} running the replicated LPUSHX")
        assert lpushx_calls(redis_cluster, n) == seen[n.name] + 1, n.name
    assert redis_cluster.admin(master, "EXISTS", "dbcheck:write-probe") == 0
    for setting, value, code in (("maxmemory", "1", "OOM"), ("min-replicas-to-write", "10", "NOREPLICAS")):
        old = redis_cluster.admin(master, "CONFIG", "GET", setting)[1]
        try:
            redis_cluster.admin(master, "CONFIG", "SET", setting, value)
            with pytest.raises(Exception, match=f"^{code}"):
                redis_cluster.admin(master, "SET", "a-client-write", "x")
            run = explain(dbcheck_bin, config, "redis_write", master.addr)
        finally:
            redis_cluster.admin(master, "CONFIG", "SET", setting, old)
        assert run.rc == 1 and run.failure == "unwritable", run
        assert run.reason.startswith(f"Redis ROLE says master but it refuses writes: {code}"), run
        assert "3 of 3 Sentinels name this node master" in run.reason, run
        assert_in_time(run, TIMEOUT, MARGIN)
        figures(f"redis master refusing writes ({code})", f"writer DOWN ({run.failure}): {run.reason[:110]}")
    assert explain(dbcheck_bin, config, "redis_write", master.addr).rc == 0


def test_a_check_user_without_the_write_probe_is_judged_as_before(redis_cluster, dbcheck_bin, redis_config):
    """A check user made from an older ACL (PING and ROLE only) may not send the probe: the
    writer passes on its two opinions, and the reason says writes were not probed and how to
    fix that; write_probe = false stops sending it."""
    master = redis_cluster.wait_stable()
    for node in redis_cluster.nodes():
        redis_cluster.admin(node, "ACL", "SETUSER", "oldacl", "on", ">oldacl-pw", "resetkeys", "-@all",
                            "+ping", "+role")
    old = {"user": "oldacl", "password": "oldacl-pw", "sentinel_user": HC_USER,
           "sentinel_password": HC_PASSWORD}
    run = explain(dbcheck_bin, redis_config("oldacl", **old), "redis_write", master.addr)
    assert run.rc == 0 and run.failure == "none", run
    assert "writes not probed: NOPERM" in run.reason and "write_probe = false" in run.reason, run
    quiet = explain(dbcheck_bin, redis_config("oldacl-off", cluster_extra="write_probe = false", **old),
                    "redis_write", master.addr)
    assert quiet.rc == 0 and quiet.reason.endswith("Redis ROLE says master"), quiet
