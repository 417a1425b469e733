"""A Patroni standby cluster (patroni #1388, #2875): two members replicating from the
session cluster's primary, their leader in role standby_leader. Never a writer. Without
source_cluster, readers are judged by the age of the last replayed commit, the only bound left
when the source primary is outside Patroni's view (docs/lag.md): within max_lag while the source
commits (a heartbeat), and the reason says why no sample was taken. With source_cluster naming
the session cluster, the source's leader is sampled and the readers are bounded like any
replica: they stay in under a quiet source, and one whose replay stops leaves and comes back."""

import time

import pytest

from conftest import started_cluster
from lab.dbcheck import assert_in_time, explain, write_dbcheck_config
from lab.heartbeat import Heartbeat
from lab.patroni import APP_DB, HC_USER, PatroniCluster
from lab.ports import free_ports
from lab.procs import wait_until

TIMEOUT = 0.8


@pytest.fixture(scope="module")
def standby(request, pg_cluster):
    source = pg_cluster.wait_healthy()
    yield from started_cluster(request,
                               lambda p: PatroniCluster(p, members=2, standby_of=source.pg_addr),
                               "dbcheck-it-pg-standby.", "Patroni standby cluster")


def test_a_standby_cluster_has_no_writer_and_bounded_readers(workdir, pg_cluster, standby,
                                                             dbcheck_bin, figures):
    lead = standby.wait_healthy()
    roles = {m["name"]: m["role"] for m in standby.cluster_view()["members"]}
    assert roles[lead.name] == "standby_leader", roles  # the setup is real
    other = next(m for m in standby.members() if m.name != lead.name)
    cfg = write_dbcheck_config(workdir, standby, owner=None, timeout="800ms", max_lag="2s")
    for m in (lead, other):
        run = explain(dbcheck_bin, cfg, "pg_write", m.pg_addr)
        assert run.rc == 1, run
        assert run.failure == "role", run
        assert_in_time(run, TIMEOUT)
    assert "leads a standby cluster (standby_leader)" in explain(
        dbcheck_bin, cfg, "pg_write", lead.pg_addr).reason
    with Heartbeat(pg_cluster, interval=0.1):
        runs = {}
        for m in (lead, other):
            runs[m.name] = wait_until(
                lambda m=m: (lambda r: r if r.rc == 0 else None)(
                    explain(dbcheck_bin, cfg, "pg_read", m.pg_addr)), 20,
                f"{m.name} a reader while the source commits")
    for name, run in runs.items():
        assert "a standby cluster: its standby_leader" in run.reason, run
        assert "last replayed commit was" in run.reason, run
    figures("standby cluster",
            "writers: none (role); readers: " + "; ".join(
                f"{n} UP lag <= {r.lag:.3f}s" for n, r in sorted(runs.items())))


def source_section(cluster, password_file, urls=None):
    """[cluster.main]: the session cluster as the standby's source (the check user and its
    password are the same on both: the standby is a physical copy of it)."""
    urls = ", ".join(f'"{u}"' for u in (urls or [m.rest_url for m in cluster.members()]))
    return f"""
[cluster.main]
engine = "postgres"
patroni = [{urls}]
dbname = "{APP_DB}"
user = "{HC_USER}"
password_file = "{password_file}"
"""


def reader(dbcheck_bin, cfg, member):
    """A reader check of `member`, which kept its deadline."""
    run = explain(dbcheck_bin, cfg, "pg_read", member.pg_addr)
    assert_in_time(run, TIMEOUT)
    return run


def test_a_standby_cluster_measured_against_its_source(workdir, pg_cluster, standby, dbcheck_bin,
                                                       figures):
    lead = standby.wait_healthy()
    other = next(m for m in standby.members() if m.name != lead.name)
    plain = write_dbcheck_config(workdir / "plain", standby, owner=None, max_lag="2s")
    measured = write_dbcheck_config(
        workdir / "measured", standby, owner=None, max_lag="2s",
        cluster_extra='source_cluster = "main"',
        extra=source_section(pg_cluster, workdir / "measured" / "pg.password"))
    unreachable = write_dbcheck_config(
        workdir / "unreachable", standby, owner=None, max_lag="2s",
        cluster_extra='source_cluster = "main"',
        extra=source_section(pg_cluster, workdir / "unreachable" / "pg.password",
                             urls=[f"http://127.0.0.1:{free_ports(1)[0]}"]))

    # A quiet source: nothing commits, so the last replayed commit ages past max_lag and the
    # commit-age bound alone takes the readers out.
    quiet = wait_until(lambda: (lambda r: r if r.rc == 1 else None)(reader(dbcheck_bin, plain, other)),
                       30, "the commit-age bound exceeding max_lag under a quiet source")
    assert quiet.failure == "lag", quiet
    assert "last replayed commit was" in quiet.reason, quiet
    # Measured against the source's leader, both members stay in.
    runs = {m.name: reader(dbcheck_bin, measured, m) for m in (lead, other)}
    for name, run in runs.items():
        assert run.rc == 0, run
        assert "of source cluster main sampled" in run.reason, run
        assert "identity not checked" not in run.reason, run  # the source's identifier is theirs
        opinions = {s["opinion"] for s in run.report["steps"]}
        assert {"source_manager", "source_sample"} <= opinions, run.report["steps"]
        assert run.lag is not None and run.lag < 2, run
    # A source that cannot be read: the commit age again, and the reason says why.
    fallback = reader(dbcheck_bin, unreachable, other)
    assert fallback.rc == 1 and fallback.failure == "lag", fallback
    assert "primary not sampled (source cluster main: " in fallback.reason, fallback
    assert "last replayed commit was" in fallback.reason, fallback
    # Writers are unchanged: a standby cluster has none.
    writer = explain(dbcheck_bin, measured, "pg_write", lead.pg_addr)
    assert writer.rc == 1 and writer.failure == "role", writer

    # Replay stopped on one member while the source commits: it leaves, the other stays, and
    # it comes back once replay resumes. Maintenance mode: Patroni would resume it otherwise.
    standby.pause()
    su = standby.superuser_conn(other)
    left = back = None
    try:
        with Heartbeat(pg_cluster, interval=0.1):
            # Paused only once it has replayed the source's commits: it leaves as they age.
            wait_until(lambda: reader(dbcheck_bin, plain, other).rc == 0, 30,
                       f"{other.name} replaying the source's heartbeat")
            with su.cursor() as cur:
                cur.execute("SELECT pg_wal_replay_pause()")
            paused_at = time.monotonic()
            left = wait_until(
                lambda: (lambda r: r if r.rc == 1 else None)(reader(dbcheck_bin, measured, other)),
                30, f"{other.name} leaving with its replay paused")
            left_after = time.monotonic() - paused_at
            assert left.failure == "lag", left
            assert "source cluster main" in left.reason and "replay is paused" in left.reason, left
            still = reader(dbcheck_bin, measured, lead)
            assert still.rc == 0, still
            with su.cursor() as cur:
                cur.execute("SELECT pg_wal_replay_resume()")
            resumed_at = time.monotonic()
            back = wait_until(
                lambda: (lambda r: r if r.rc == 0 else None)(reader(dbcheck_bin, measured, other)),
                30, f"{other.name} a reader again after replay resumed")
            back_after = time.monotonic() - resumed_at
            assert "of source cluster main sampled" in back.reason, back
    finally:
        if back is None:
            with su.cursor() as cur:
                cur.execute("SELECT pg_wal_replay_resume()")
        su.close()
        standby.resume()
    figures("standby cluster against its source",
            f"quiet source: commit-age bound {quiet.lag:.1f}s (down), measured "
            + "; ".join(f"{n} UP lag <= {r.lag:.3f}s" for n, r in sorted(runs.items()))
            + f"; replay paused: left after {left_after:.1f}s (max_lag 2s, {left.lag:.1f}s), "
            f"back {back_after:.1f}s after resume (lag <= {back.lag:.3f}s)")
