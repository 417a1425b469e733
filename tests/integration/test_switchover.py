"""`dbcheck switchover`: a planned switchover through HAProxy (the shipped examples, dbcheck as
the check) with a writer sending numbered writes the whole time; every acknowledged write
must be on the new primary afterwards. Also the plan (--dry-run), the refusals, the operator
user's least privilege, and an abort that must leave the old master unpaused."""

import subprocess
import time

import pytest

from fixtures import redis as redis_fx
from fixtures.dbcheck import operator_lines, write_check_wrapper, write_dbcheck_config, write_redis_config
from fixtures.haproxy import render_example_for, render_redis_example_for
from fixtures.patroni import APP_DB, APP_PASSWORD, APP_USER
from fixtures.procs import wait_until
from fixtures.writers import PgWriter, RedisWriter


def switchover(dbcheck_bin, config, cluster, *args, timeout=90):
    return subprocess.run([str(dbcheck_bin), "--config", str(config), "switchover", cluster, *args],
                          capture_output=True, text=True, timeout=timeout, env={"PATH": "/usr/bin:/bin"})


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
    assert "plan (dry run, nothing changed):" in res.stdout and "CLIENT PAUSE" in res.stdout, res.stdout
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
    for cmd in (("SENTINEL", "SET", redis_fx.MASTER_NAME, "quorum", "1"), ("SENTINEL", "REMOVE", redis_fx.MASTER_NAME)):
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
        assert f"{phase} done:" in res.stdout.replace("  ", " ").replace("  ", " "), (phase, res.stdout)
    stored = {int(x) for x in redis_cluster.admin(new, "LRANGE", key, 0, -1, timeout=5)}
    acked = [wid for _, wid, _ in writer.acks]
    lost = [wid for wid in acked if wid not in stored]
    assert len(acked) > 100 and lost == [], (len(acked), lost[:20])
    summary = res.stdout.strip().splitlines()[-1]
    figures("redis dbcheck switchover", f"{summary}; {len(acked)} writes acknowledged, 0 lost")


def test_redis_abort_unpauses_the_old_master(redis_cluster, redis_setup, dbcheck_bin):
    """A deadline shorter than Sentinel's switch (~1.1 s): the switchover fails while
    confirming and must release the writes it held (the old master answers writes again at
    once: a paused one would hold this SET for the whole 60 s pause)."""
    old = redis_setup["master"]
    res = switchover(dbcheck_bin, redis_setup["config"], "cache", "--timeout", "500ms", "--pause", "60s")
    assert res.returncode == 6, res.stdout + res.stderr
    assert "confirm FAILED" in res.stdout.replace("  ", " ").replace("  ", " "), res.stdout
    assert "unpaused" in res.stdout, res.stdout
    t0 = time.monotonic()
    try:
        redis_cluster.admin(old, "SET", "after-abort", "1", timeout=5)
    except redis_fx.RedisError as err:  # already converted: a replica refuses, it does not hold
        assert "READONLY" in str(err)
    assert time.monotonic() - t0 < 2, "the old master still holds writes"
    redis_cluster.wait_stable(60)


def test_pg_switchover_loses_no_acknowledged_write(pg_cluster, dbcheck_bin, haproxy_factory, workdir, figures):
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
    figures("pg dbcheck switchover", f"{res.stdout.strip().splitlines()[-1]}; {len(acked)} writes acknowledged, "
            "0 lost")
    pg_cluster.wait_healthy()
