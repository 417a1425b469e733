"""`dbcheck setup-sql` prints exactly the least-privilege setup the fixtures load (so the
tests below prove what an operator installs), and that setup grants nothing but the check:
every query dbcheck runs answers in full (the replica's WAL receiver status, every session
counted for "connections N of M"), the check passes, and the role still cannot read other
sessions' query text (it has no predefined role: not pg_monitor, not pg_read_all_stats)."""

import re
import subprocess
from pathlib import Path

import psycopg2
import pytest

from lab.dbcheck import write_dbcheck_config
from lab.patroni import APP_DB, HC_PASSWORD, HC_USER
from lab.procs import rerun_until

REPO = Path(__file__).resolve().parents[2]
PG_ROWS = REPO / "common" / "core" / "pg_rows.hpp"
SHIPPED = {
    "postgres": REPO / "docs" / "sql" / "healthcheck-role.sql",
    "redis": REPO / "docs" / "redis" / "data-node-acl.conf",
    "sentinel": REPO / "docs" / "redis" / "sentinel-acl.conf",
    "redis-operator": REPO / "docs" / "redis" / "operator-node-acl.conf",
    "sentinel-operator": REPO / "docs" / "redis" / "operator-sentinel-acl.conf",
}


@pytest.mark.parametrize("what", sorted(SHIPPED))
def test_setup_sql_prints_the_shipped_file(dbcheck_bin, what):
    # No config is needed (or read): this runs before there is one.
    res = subprocess.run([str(dbcheck_bin), "--config", "/nonexistent", "setup-sql", what],
                         capture_output=True, text=True, timeout=10, env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    assert res.stdout == SHIPPED[what].read_text()


def test_setup_sql_rejects_an_unknown_name(dbcheck_bin):
    res = subprocess.run([str(dbcheck_bin), "setup-sql", "mysql"], capture_output=True, text=True, timeout=10)
    assert res.returncode == 64 and "mysql not in {" in res.stderr and "postgres" in res.stderr, res


def test_postgres_check_role_can_check_but_not_write(pg_cluster):
    """The role docs/sql/healthcheck-role.sql creates (the fixture's post_bootstrap runs it)
    answers dbcheck's queries and is refused everything else."""
    leader = pg_cluster.wait_healthy()
    su = pg_cluster.superuser_conn(leader)
    with su.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        su_pid = cur.fetchone()[0]
    conn = psycopg2.connect(host="127.0.0.1", port=leader.pg_port, user=HC_USER, password=HC_PASSWORD,
                            dbname=APP_DB, connect_timeout=2)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_is_in_recovery(), current_setting('transaction_read_only'), "
                        "pg_current_wal_lsn()")
            assert cur.fetchone()[0] is False
        for sql in ("CREATE TABLE hc_probe (x int)", "INSERT INTO public.heartbeat VALUES (999, now())",
                    "DELETE FROM public.heartbeat", "SELECT * FROM public.heartbeat",
                    "CREATE TABLE public.hc_probe (x int)", "CREATE VIEW dbcheck.hc_probe AS SELECT 1",
                    "CREATE OR REPLACE VIEW dbcheck.pg_stat_activity AS SELECT 'x'::text AS backend_type",
                    f"SELECT pg_terminate_backend({su_pid})", "CHECKPOINT",
                    "ALTER SYSTEM SET work_mem = '1MB'", "SELECT pg_promote()",
                    "CREATE ROLE hc_child"):
            with conn.cursor() as cur, pytest.raises(psycopg2.Error) as err:
                cur.execute(sql)
            assert err.value.pgcode == "42501", (sql, err.value.pgcode, err.value)  # insufficient_privilege
        # The write probe (write_probe = true): its statements run as the role, and roll back.
        with conn.cursor() as cur:
            for sql in ("BEGIN", "SET LOCAL lock_timeout = '500ms'", "TRUNCATE dbcheck.write_probe",
                        "INSERT INTO dbcheck.write_probe (checked_at) VALUES (now())", "ROLLBACK"):
                cur.execute(sql)
        with su.cursor() as cur:
            cur.execute("SELECT count(*) FROM dbcheck.write_probe")
            assert cur.fetchone()[0] == 1  # the setup's row, nothing the probe added or removed
        # and nothing else on that table: its rows stay unreadable, unchangeable
        for sql in ("SELECT * FROM dbcheck.write_probe", "DELETE FROM dbcheck.write_probe",
                    "UPDATE dbcheck.write_probe SET checked_at = now()"):
            with conn.cursor() as cur, pytest.raises(psycopg2.Error) as err:
                cur.execute(sql)
            assert err.value.pgcode == "42501", (sql, err.value.pgcode, err.value)
    finally:
        conn.close()
        su.close()


def check_sql():
    """dbcheck's own SQL, read from the header that defines it: {name: text}."""
    text = PG_ROWS.read_text()
    found = {m.group(1): "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(2)))
             for m in re.finditer(r"inline constexpr const char\* (k_\w+_sql) =((?:\s*\"[^;]*\")+);", text)}
    assert {"k_writer_sql", "k_sample_sql", "k_replica_sql", "k_replay_sql"} <= set(found), found
    return found


def hc_connect(member, dbname=APP_DB):
    conn = psycopg2.connect(host="127.0.0.1", port=member.pg_port, user=HC_USER, password=HC_PASSWORD,
                            dbname=dbname, connect_timeout=2)
    conn.autocommit = True
    return conn


def query(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def test_least_role_answers_every_check_query_in_full(pg_cluster):
    """Each statement dbcheck sends answers as the role, with nothing hidden: the replica's WAL
    receiver status and timeline (NULL to a bare role), the writer's count of client
    backends including other users' sessions (a bare role counts only its own), and the system
    identifier in each (pg_control_system(): PUBLIC's by default, no grant needed)."""
    sql = check_sql()
    leader = pg_cluster.wait_healthy()
    others = [pg_cluster.superuser_conn(leader) for _ in range(3)]
    conn = hc_connect(leader)
    try:
        for c in others:
            query(c, "SELECT 1")
        [(in_recovery, read_only, connections, limit, sysid)] = query(conn, sql["k_writer_sql"])
        assert (in_recovery, read_only) == (False, "off")
        assert sysid, sysid
        # the three superuser sessions and ours at least (Patroni holds more)
        assert connections >= 4 and limit > 0, (connections, limit)
        [(lsn, timeline, sample_sysid)] = query(conn, sql["k_sample_sql"])
        assert lsn and re.fullmatch(r"[0-9A-F]{8}", timeline), (lsn, timeline)
        assert sample_sysid == sysid, (sample_sysid, sysid)
    finally:
        conn.close()
        for c in others:
            c.close()
    for replica in pg_cluster.replicas():
        conn = hc_connect(replica)
        try:
            [row] = query(conn, sql["k_replica_sql"])
            assert row[0] is True and row[1] is True and row[2] == "streaming" and row[6] is not None, row
            assert row[7] == sysid, (row, sysid)  # a replica holds its cluster's identifier
            [(replay_lsn, _age)] = query(conn, sql["k_replay_sql"])
            assert replay_lsn, replica.name
        finally:
            conn.close()


def test_least_role_passes_the_check(pg_cluster, dbcheck_bin, workdir):
    """dbcheck itself, with the role: the leader UP as the writer (its report counting every
    client backend), each replica UP as a reader."""
    leader = pg_cluster.wait_healthy()
    cfg = write_dbcheck_config(workdir, pg_cluster, owner=None)
    res = subprocess.run([str(dbcheck_bin), "--config", str(cfg), "explain", "pg_write", leader.pg_addr],
                         capture_output=True, text=True, timeout=20)
    assert res.returncode == 0 and "UP" in res.stdout, res.stdout + res.stderr
    m = re.search(r"connections (\d+) of (\d+)", res.stdout)
    assert m and int(m.group(1)) >= 2 and int(m.group(2)) > 0, res.stdout  # not just its own
    for replica in pg_cluster.replicas():
        rerun_until(lambda: subprocess.run([str(dbcheck_bin), "--config", str(cfg), "check", "pg_read",
                                            replica.pg_addr], capture_output=True, text=True, timeout=20),
                    lambda res: res.returncode == 0 and "UP" in res.stdout, 30,
                    f"{replica.name} UP as a reader")


def test_least_role_cannot_read_other_sessions_queries(pg_cluster):
    """Another user's session, idle after a query naming a marker: the role sees the session
    but "<insufficient privilege>" for its query, in the catalog's pg_stat_activity (its own
    pg_stat_activity has no query column at all); it holds no predefined role."""
    marker = "dbcheck-marker-not-for-the-check-role"
    leader = pg_cluster.wait_healthy()
    su = pg_cluster.superuser_conn(leader)
    conn = hc_connect(leader)
    try:
        with su.cursor() as cur:
            cur.execute(f"SELECT pg_backend_pid(), '{marker}'")
            su_pid = cur.fetchone()[0]
        [(text,)] = query(conn, f"SELECT query FROM pg_catalog.pg_stat_activity WHERE pid = {su_pid}")
        assert text == "<insufficient privilege>", text
        assert query(conn, "SELECT count(*) FROM pg_catalog.pg_stat_activity "
                           f"WHERE query LIKE '%{marker[:-1]}%' AND pid <> pg_backend_pid()") == [(0,)]
        with conn.cursor() as cur, pytest.raises(psycopg2.Error) as err:
            cur.execute("SELECT query FROM pg_stat_activity")
        assert err.value.pgcode == "42703", err.value  # undefined_column: the view shows backend_type only
        [(stats, monitor, settings)] = query(
            conn, "SELECT pg_has_role(current_user, 'pg_read_all_stats', 'usage'), "
                  "pg_has_role(current_user, 'pg_monitor', 'usage'), "
                  "pg_has_role(current_user, 'pg_read_all_settings', 'usage')")
        assert (stats, monitor, settings) == (False, False, False)
    finally:
        conn.close()
        su.close()
