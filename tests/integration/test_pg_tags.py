"""Patroni member tags against a real cluster: pg2 tagged noloadbalance (never a
reader, as Patroni's own GET /replica answers 503), pg3 tagged nofailover and replicatefrom
pg2 (a cascading replica that never becomes leader: still a reader, its lag bounded against
the leader's WAL position, not pg2's)."""

import pytest

from conftest import started_cluster
from lab.dbcheck import assert_in_time, explain, write_dbcheck_config
from lab.patroni import PatroniCluster
from lab.procs import wait_until

TIMEOUT = 0.8


@pytest.fixture(scope="module")
def tagged(request):
    tags = {"pg2": {"noloadbalance": True}, "pg3": {"nofailover": True, "replicatefrom": "pg2"}}
    yield from started_cluster(request, lambda p: PatroniCluster(p, member_tags=tags),
                               "dbcheck-it-pg-tags.", "Patroni cluster (tags)")


def test_tags_decide_readers_as_patroni_does(workdir, tagged, dbcheck_bin, figures):
    leader = tagged.wait_healthy()
    assert leader.name == "pg1", leader  # pg3 cannot lead; pg1 bootstrapped
    pg2, pg3 = tagged.member("pg2"), tagged.member("pg3")

    # The setup is real: pg3 streams from pg2 (wait_healthy waits for the leader's direct
    # replicas only), and Patroni's own /replica refuses pg2.
    def sender_port():
        with tagged.superuser_conn(pg3, db="postgres") as conn, conn.cursor() as cur:
            cur.execute("SELECT sender_port FROM pg_stat_wal_receiver WHERE status = 'streaming'")
            row = cur.fetchone()
            return row[0] if row else None
    assert wait_until(sender_port, 60, "pg3 streaming") == pg2.pg_port
    wait_until(lambda: tagged.rest(pg3, "/replica")[0] == 200, 30, "Patroni's /replica 200 on pg3")
    assert tagged.rest(pg2, "/replica")[0] == 503
    cfg = write_dbcheck_config(workdir, tagged, owner=None, timeout="800ms")
    run2 = explain(dbcheck_bin, cfg, "pg_read", pg2.pg_addr)
    assert run2.rc == 1, run2
    assert run2.failure == "policy", run2
    assert "tagged noloadbalance" in run2.reason, run2
    run3 = explain(dbcheck_bin, cfg, "pg_read", pg3.pg_addr)
    assert run3.rc == 0, run3
    assert_in_time(run3, TIMEOUT)
    sample = next(s for s in run3.report["steps"] if s["opinion"] == "primary_sample")
    assert sample["peer"] == leader.pg_addr, sample  # the leader's position, not pg2's
    # Any member's answer that was read (a member not waited for says "not needed").
    answers = [s["answer"] for s in run3.report["steps"] if s["asked"] == "GET /cluster"]
    assert any("pg3 replica" in a and "(nofailover, replicatefrom pg2)" in a for a in answers), answers
    figures("Patroni tags", f"pg2 noloadbalance: {run2.state} ({run2.failure}), Patroni /replica 503; "
            f"pg3 nofailover+replicatefrom pg2: {run3.state}, lag <= {run3.lag:.3f}s against the leader")
