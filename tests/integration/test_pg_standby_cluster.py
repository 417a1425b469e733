"""A Patroni standby cluster (patroni #1388, #2875): two members replicating from the
session cluster's primary, their leader in role standby_leader. Never a writer; readers are
judged by the age of the last replayed commit, the only bound left when the source primary is
outside Patroni's view (docs/lag.md): within max_lag while the source commits (a heartbeat),
and the reason says why no sample was taken."""

import pytest

from conftest import started_cluster
from lab.dbcheck import assert_in_time, explain, write_dbcheck_config
from lab.heartbeat import Heartbeat
from lab.patroni import PatroniCluster
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
