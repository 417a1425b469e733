"""Another cluster's node behind a server line: a PostgreSQL initdb'd on its own (its own
system identifier) while dbcheck asks the session's Patroni cluster. The reader samples the
real leader; the writer's members (one that lies about the leader's address, as a stale
connect_address or a re-used address does) name that PostgreSQL's address as the leader's,
and confirm it with the real leader's GET /primary body, database_system_identifier included
(on loopback every member shares the host, so the configured member is asked for it)."""

import pytest

from conftest import started_cluster
from lab.dbcheck import assert_in_time, explain, write_dbcheck_config
from lab.fake_patroni import FakePatroni
from lab.standalone_pg import StandalonePostgres

TIMEOUT = 0.8


@pytest.fixture(scope="module")
def other_pg(request):
    """A standalone PostgreSQL: another cluster's node, for this module."""
    yield from started_cluster(request, StandalonePostgres, "dbcheck-it-other-pg.",
                               "standalone PostgreSQL")


def _ids(pg_cluster, other_pg):
    """(the cluster's identifier, the other node's), as pg_controldata prints them."""
    leader = pg_cluster.wait_healthy()
    with pg_cluster.superuser_conn(leader) as conn, conn.cursor() as cur:
        cur.execute("SELECT system_identifier FROM pg_control_system()")
        ours = cur.fetchone()[0] % 2**64
    theirs = other_pg.sql("SELECT system_identifier FROM pg_control_system()") % 2**64
    assert ours != theirs
    return leader, ours, theirs


def test_a_reader_of_another_cluster_is_identity(workdir, pg_cluster, other_pg, dbcheck_bin,
                                                 figures):
    """The replica check's own query and the leader's sample carry both identifiers: another
    cluster's node fails identity, at once, before its role or Patroni's list is looked at."""
    leader, ours, theirs = _ids(pg_cluster, other_pg)
    cfg = write_dbcheck_config(workdir / "reader", pg_cluster, owner=None)
    run = explain(dbcheck_bin, cfg, "pg_read", other_pg.pg_addr)
    assert run.rc == 1, run
    assert run.failure == "identity", run
    assert run.reason.startswith(f"identity: PostgreSQL's system identifier {theirs} is not the "
                                 f"cluster's {ours} that its leader {leader.name} (sampled)"), run
    sql_steps = [s for s in run.report["steps"] if s["opinion"] in ("node", "primary_sample")]
    assert len(sql_steps) == 2, run.report["steps"]  # no extra query for the identity
    assert_in_time(run, TIMEOUT)
    # A real replica of the cluster still passes, its identifier compared.
    replica = pg_cluster.member(pg_cluster.streaming_replicas()[0])
    ok = explain(dbcheck_bin, cfg, "pg_read", replica.pg_addr)
    assert ok.rc == 0 and "identity" not in ok.reason, ok
    node = next(s for s in ok.report["steps"] if s["opinion"] == "node")
    assert f"system_identifier={ours}" in node["answer"], node
    figures("identity (reader of another cluster)",
            f"DOWN identity in {run.report['elapsed_ms']:.0f} ms: {run.reason[:120]}")


def test_a_writer_address_reaching_another_cluster_is_identity(workdir, pg_cluster, other_pg,
                                                               dbcheck_bin, figures):
    """The members name the standalone PostgreSQL's address as the leader's and confirm it with
    the real leader's own GET /primary body: identity, not a writer."""
    leader, ours, theirs = _ids(pg_cluster, other_pg)
    status, primary = pg_cluster.rest(leader, "/primary")
    assert status == 200 and primary["database_system_identifier"] == str(ours), primary
    view = pg_cluster.cluster_view()
    lead = next(m for m in view["members"] if m["name"] == leader.name)
    host, port = other_pg.pg_addr.rsplit(":", 1)
    lead["host"], lead["port"] = host, int(port)
    with FakePatroni() as stale:
        stale.routes = {"/cluster": (200, view), "/primary": (200, primary)}
        cfg = write_dbcheck_config(workdir / "writer", pg_cluster, owner=None,
                                   patroni_urls=[stale.url])
        run = explain(dbcheck_bin, cfg, "pg_write", other_pg.pg_addr)
    assert run.rc == 1, run
    assert run.failure == "identity", run
    assert run.reason.startswith(f"identity: PostgreSQL's system identifier {theirs} is not the "
                                 f"cluster's {ours} that Patroni (GET {stale.url}/primary) "
                                 "reports: this server line points at another cluster's node"), run
    assert_in_time(run, TIMEOUT)
    # The real leader, asked through the real members, passes with its identifier compared.
    ok = explain(dbcheck_bin, write_dbcheck_config(workdir / "real", pg_cluster, owner=None),
                 "pg_write", leader.pg_addr)
    assert ok.rc == 0 and "identity" not in ok.reason, ok
    figures("identity (writer address reaching another cluster)",
            f"DOWN identity in {run.report['elapsed_ms']:.0f} ms; Patroni "
            f"{primary['patroni']['version']} reports database_system_identifier")


def test_a_check_user_refused_pg_control_system_is_not_failed_for_it(
        workdir, pg_cluster, other_pg, dbcheck_bin):
    """With EXECUTE on pg_control_system() revoked from PUBLIC the node's question is asked
    again without the identifier (42501 naming it): the identity is not checked, and the node
    is judged on the rest (here: a primary, not a replica)."""
    cfg = write_dbcheck_config(workdir / "refused", pg_cluster, owner=None)
    other_pg.sql("REVOKE EXECUTE ON FUNCTION pg_control_system() FROM PUBLIC")
    try:
        run = explain(dbcheck_bin, cfg, "pg_read", other_pg.pg_addr)
    finally:
        other_pg.sql("GRANT EXECUTE ON FUNCTION pg_control_system() TO PUBLIC")
    assert run.rc == 1, run
    assert run.failure == "role", run
    assert run.reason == "PostgreSQL is not in recovery (it is a primary), not a replica", run
    node = next(s for s in run.report["steps"] if s["opinion"] == "node")
    assert "system_identifier" not in node["answer"], node
    assert_in_time(run, TIMEOUT)
