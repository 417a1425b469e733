"""Fault cases for the PostgreSQL/Patroni check against real servers (and a misbehaving
HTTP peer where Patroni would have to lie): every one fails closed, in time, with a reason."""

import os
import signal

import pytest

from lab.dbcheck import assert_in_time, explain, run_dbcheck, write_dbcheck_config
from lab.fake_http import FakeHttp
from lab.faults import connections_exhausted
from lab.patroni import HBA_REJECTED_USER
from lab.ports import free_ports

TIMEOUT = 0.8        # dbcheck's own deadline in these configs
MARGIN = 0.1         # the bound: a check ends within timeout + 100 ms


@pytest.fixture
def config_for(workdir, pg_cluster):
    """config_for(name, **kw) -> a dbcheck.toml for pg_cluster (password file owned by root)."""
    def make(name, timeout="800ms", **kw):
        return write_dbcheck_config(workdir / name, pg_cluster, owner=None, timeout=timeout, **kw)
    return make


def test_wedged_postgres_times_out_within_the_deadline(pg_cluster, dbcheck_bin, config_for, figures):
    """SIGSTOP on the postmaster: connections are accepted by the kernel and never answered."""
    config = config_for("ok")
    leader = pg_cluster.wait_healthy()
    replica = pg_cluster.replicas()[0]
    times = []
    for member, backends in ((replica, ("pg_read", "pg_write")), (leader, ("pg_write",))):
        pid = pg_cluster.postmaster_pid(member)
        os.kill(pid, signal.SIGSTOP)
        try:
            for backend in backends:
                run = explain(dbcheck_bin, config, backend, member.pg_addr)
                times.append(run.elapsed)
                assert run.rc == 1, run
                # A wedged replica checked as a writer: Patroni names another leader, and a
                # definite "not this node" wins over the node's timeout (role).
                writer_elsewhere = backend == "pg_write" and member is replica
                assert run.failure == ("role" if writer_elsewhere else "timeout"), run
                assert "PostgreSQL timed out: no answer before the deadline" in run.reason, run
                # "not the writer" only for a definite answer: a node that does not answer
                # has given none.
                assert run.reason.startswith("not the writer: ") == writer_elsewhere, run
                assert_in_time(run, TIMEOUT, MARGIN)
        finally:
            os.kill(pid, signal.SIGCONT)
    assert explain(dbcheck_bin, config, "pg_write", leader.pg_addr).rc == 0
    figures("wedged node (SIGSTOP postmaster)",
            f"check ended in {min(times) * 1000:.0f}-{max(times) * 1000:.0f} ms "
            f"(timeout 800 ms), failing with 'PostgreSQL timed out'")


@pytest.mark.parametrize("mode", ["down", "garbage", "500", "slow", "trickle", "hang", "huge", "truncated"])
def test_patroni_unusable_fails_the_writer_closed(pg_cluster, dbcheck_bin, config_for, mode, figures):
    """Every Patroni endpoint refuses, lies or stalls: the writer check fails within the deadline."""
    leader = pg_cluster.wait_healthy()
    if mode == "down":
        urls = [f"http://127.0.0.1:{p}" for p in free_ports(3)]
        servers = []
    else:
        servers = [FakeHttp(mode).__enter__() for _ in range(3)]
        urls = [s.url for s in servers]
    expected = {"down": "network", "garbage": "protocol", "500": "protocol", "slow": "timeout",
                "trickle": "timeout", "hang": "timeout", "huge": "protocol", "truncated": "protocol"}[mode]
    # A fake that answers at once is given a deadline no busy machine can make it miss: what is
    # tested there is how the answer is judged, not how fast a starved fake sends it.
    timeout = TIMEOUT if expected == "timeout" else 5.0
    try:
        config = config_for(f"patroni-{mode}", patroni_urls=urls, timeout=f"{timeout * 1000:.0f}ms")
        run = explain(dbcheck_bin, config, "pg_write", leader.pg_addr)
    finally:
        for s in servers:
            s.stop()
    assert run.rc == 1, run
    assert_in_time(run, timeout, MARGIN)
    assert run.failure == expected, run
    # The first words say what went wrong with Patroni, never "not the writer".
    first = {"network": "cannot reach Patroni: ", "protocol": "unusable answer from Patroni: ",
             "timeout": "Patroni timed out: "}[expected]
    assert run.reason.startswith(first), run
    if servers:
        assert sum(s.requests for s in servers) >= 1, "the fake Patroni was never asked"
    figures(f"Patroni {mode}",
            f"writer DOWN ({run.failure}) in {run.elapsed * 1000:.0f} ms: {run.reason[:150]}")


def test_one_good_patroni_member_is_enough(pg_cluster, dbcheck_bin, config_for):
    """Members are asked in parallel; the first valid answer is the DCS's view."""
    leader = pg_cluster.wait_healthy()
    with FakeHttp("hang") as slow, FakeHttp("garbage") as bad:
        config = config_for("mixed", patroni_urls=[slow.url, bad.url, leader.rest_url])
        run = explain(dbcheck_bin, config, "pg_write", leader.pg_addr)
    assert run.rc == 0, run
    assert_in_time(run, TIMEOUT, margin=0)  # the hung member was not waited for


def test_wrong_password_fails_clearly_without_the_secret(pg_cluster, dbcheck_bin, config_for):
    leader = pg_cluster.wait_healthy()
    secret = "wrong-Secret-4711"
    config = config_for("badpw", password=secret)
    for args in (("check", "pg_write", leader.pg_addr),
                 ("explain", "pg_read", pg_cluster.replicas()[0].pg_addr),
                 ("explain", "pg_write", leader.pg_addr, "--json")):
        run = run_dbcheck(dbcheck_bin, config, *args)
        assert run.rc == 1, run
        assert "password authentication failed" in run.stdout, run
        assert secret not in run.stdout + run.stderr
    run = explain(dbcheck_bin, config, "pg_write", leader.pg_addr)
    assert run.failure == "auth", run
    # The real leader with a bad password: the login failed, it is not "not the writer".
    assert run.reason.startswith("cannot log in to PostgreSQL: 28P01: "), run
    assert "Patroni names this node" in run.reason, run
    assert_in_time(run, TIMEOUT, MARGIN)


def test_pg_hba_reject_fails_clearly(pg_cluster, dbcheck_bin, config_for):
    leader = pg_cluster.wait_healthy()
    config = config_for("hba", user=HBA_REJECTED_USER)
    run = explain(dbcheck_bin, config, "pg_write", leader.pg_addr)
    assert run.rc == 1, run
    assert run.failure == "auth", run
    assert run.reason.startswith("cannot log in to PostgreSQL: 28000: "), run
    assert "pg_hba.conf rejects connection" in run.reason, run
    assert_in_time(run, TIMEOUT, MARGIN)


def test_max_connections_exhausted_follows_on_saturation(pg_cluster, dbcheck_bin, config_for, figures):
    leader = pg_cluster.wait_healthy()
    keep_up = config_for("sat-up")
    eject = config_for("sat-down", writer_extra='on_saturation = "down"')
    with connections_exhausted(pg_cluster, leader) as (held, _refusal):
        up = explain(dbcheck_bin, keep_up, "pg_write", leader.pg_addr)
        down = explain(dbcheck_bin, eject, "pg_write", leader.pg_addr)
    assert up.rc == 0 and up.failure == "saturated", up
    assert up.reason.startswith("saturated: ") and "53300" in up.reason, up
    assert down.rc == 1 and down.failure == "saturated", down
    assert_in_time(up, TIMEOUT, MARGIN)
    assert_in_time(down, TIMEOUT, MARGIN)
    assert explain(dbcheck_bin, keep_up, "pg_write", leader.pg_addr).failure == "none"
    figures("max_connections exhausted", f"after {held} app connections: on_saturation=up -> UP "
            f"({up.reason[:90]}...), on_saturation=down -> DOWN")


def test_password_file_readable_by_others_is_refused(pg_cluster, dbcheck_bin, config_for):
    config = config_for("loose")
    pw = config.parent / "pg.password"
    pw.chmod(0o644)
    for args in (("config-check",), ("check", "pg_write", "127.0.0.1:5432")):
        run = run_dbcheck(dbcheck_bin, config, *args)
        assert run.rc == 2, run
        assert f"{config}:9: cluster.pg.password_file: password file {pw} is accessible by group or others " \
               f"(mode 0644); run: chmod 600 {pw}" in run.stderr, run
        assert "hc-secret" not in run.stdout + run.stderr


def test_an_unreadable_password_file_fails_only_its_own_cluster(pg_cluster, dbcheck_bin, config_for,
                                                                tmp_path):
    # One bad file of another cluster must not take every backend of the host down.
    missing = tmp_path / "cache.password"
    config = config_for("other-broken", extra=f"""
[cluster.cache]
engine = "redis"
sentinels = ["127.0.0.1:1"]
master_name = "mymaster"
password_file = "{missing}"

[backend.cache_write]
cluster = "cache"
role = "primary"
""")
    leader = pg_cluster.wait_healthy()
    ok = explain(dbcheck_bin, config, "pg_write", leader.pg_addr)
    assert ok.rc == 0 and ok.failure == "none", ok
    message = f"cluster.cache.password_file: cannot read password file {missing}: No such file or directory"
    for args in (("config-check",), ("check", "cache_write", "127.0.0.1:6379")):
        run = run_dbcheck(dbcheck_bin, config, *args)
        assert run.rc == 2, run
        assert message in run.stderr, run


def test_config_errors_are_line_numbered(pg_cluster, dbcheck_bin, config_for):
    config = config_for("typo", extra='\n[backend.pg_other]\ncluster = "pg"\nrole = "replica"\n'
                                      'max_lag = "5x"\nmaxlag = "1s"\n')
    run = run_dbcheck(dbcheck_bin, config, "config-check")
    assert run.rc == 2, run
    lines = run.stderr.strip().splitlines()
    text = config.read_text().split("\n")
    bad, unknown = (text.index(line) + 1 for line in ('max_lag = "5x"', 'maxlag = "1s"'))
    assert lines == [
        f'configuration error: {config}:{bad}: backend.pg_other.max_lag: "5x" is not a duration (expected a '
        'number with a unit: ms, s or m, e.g. "800ms" or "1.5s")',
        f'configuration error: {config}:{unknown}: backend.pg_other.maxlag: unknown key "maxlag" in '
        '[backend.pg_other] (expected one of: cluster, role, timeout, max_lag, max_latency, '
        'on_saturation, readers)',
    ], run.stderr


def test_haproxy_invocation_of_an_unknown_backend_is_a_config_error(pg_cluster, dbcheck_bin, config_for):
    config = config_for("ok")
    leader = pg_cluster.wait_healthy()
    host, port = leader.pg_addr.split(":")
    env = {"HAPROXY_PROXY_NAME": "pg_unknown", "HAPROXY_SERVER_ADDR": host, "HAPROXY_SERVER_PORT": port}
    run = run_dbcheck(dbcheck_bin, config, "NOT_USED", "NOT_USED", host, port, env=env)
    assert run.rc == 2, run
    env["HAPROXY_PROXY_NAME"] = "pg_write"
    assert run_dbcheck(dbcheck_bin, config, "NOT_USED", "NOT_USED", host, port, env=env).rc == 0


def test_hung_leader_does_not_starve_healthy_replicas(pg_cluster, dbcheck_bin, config_for, heartbeat,
                                                      figures):
    """The leader's postmaster frozen (new connections hang; existing sessions, the heartbeat
    writer's among them, keep committing): the replica check still gets its own answer in
    time, and the reason names the leader, not the replica."""
    config = config_for("ok")
    leader = pg_cluster.leader()
    replica = pg_cluster.replicas()[0]
    pid = pg_cluster.postmaster_pid(leader)
    os.kill(pid, signal.SIGSTOP)
    try:
        run = explain(dbcheck_bin, config, "pg_read", replica.pg_addr)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert_in_time(run, TIMEOUT, MARGIN)
    assert "PostgreSQL timed out" not in run.reason, run
    assert "primary not sampled (leader" in run.report["lag"]["derivation"], run
    # The heartbeat still commits through its open session: the last replayed commit is fresh.
    assert run.rc == 0, run
    figures("hung leader",
            f"replica check {run.state.upper()} in {run.elapsed * 1000:.0f} ms: {run.reason[:160]}")
