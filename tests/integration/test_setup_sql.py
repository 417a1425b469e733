"""`dbcheck setup-sql` prints exactly the least-privilege setup the fixtures load (so the
tests below prove what an operator installs), and that setup grants nothing but the check."""

import subprocess
from pathlib import Path

import psycopg2
import pytest

from fixtures.patroni import APP_DB, HC_PASSWORD, HC_USER

REPO = Path(__file__).resolve().parents[2]
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
    assert res.returncode == 2 and "mysql not in {" in res.stderr and "postgres" in res.stderr, res


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
        for sql in ("CREATE TABLE hc_probe (x int)", "INSERT INTO heartbeat VALUES (999, now())",
                    "DELETE FROM heartbeat", "SELECT * FROM heartbeat",
                    f"SELECT pg_terminate_backend({su_pid})", "CHECKPOINT",
                    "ALTER SYSTEM SET work_mem = '1MB'", "SELECT pg_promote()",
                    "CREATE ROLE hc_child"):
            with conn.cursor() as cur, pytest.raises(psycopg2.Error) as err:
                cur.execute(sql)
            assert err.value.pgcode == "42501", (sql, err.value.pgcode, err.value)  # insufficient_privilege
    finally:
        conn.close()
        su.close()
