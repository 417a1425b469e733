"""The PostgreSQL node over TLS (issue 13): a Patroni cluster whose PostgreSQL serves a
certificate from a test CA and takes TCP clients over TLS only (hostssl). The check with
sslmode = "verify-full" and that CA passes; with another CA it fails closed saying why; without
TLS the server itself refuses it (so the passing check really ran over TLS)."""

import shutil

import pytest

from conftest import started_cluster
from fixtures.dbcheck import assert_in_time, explain, write_dbcheck_config
from fixtures.patroni import PatroniCluster
from fixtures.test_ca import issue, make_ca

TIMEOUT = 0.8


@pytest.fixture(scope="module")
def tls(request):
    """(cluster, good CA, other CA): PostgreSQL serving a certificate for 127.0.0.1 and
    localhost, signed by the good CA."""
    cas = {}

    def make(path):
        certs = path / "certs"
        cas["good"], cas["other"] = make_ca(certs, "good"), make_ca(certs, "other")
        server = issue(cas["good"], certs, "server", ["IP:127.0.0.1", "DNS:localhost"])
        certs.chmod(0o755)
        for f in (server.cert, server.key):
            shutil.chown(f, "postgres", "postgres")
        return PatroniCluster(path, pg_tls=server)
    for cluster in started_cluster(request, make, "dbcheck-it-pg-tls.", "Patroni cluster (TLS)"):
        yield cluster, cas["good"], cas["other"]


def _config(workdir, cluster, name, extra):
    return write_dbcheck_config(workdir / name, cluster, owner=None, timeout="800ms",
                                cluster_extra=extra)


def test_verify_full_with_the_clusters_ca(workdir, tls, dbcheck_bin, figures):
    cluster, good, _ = tls
    leader = cluster.wait_healthy()
    replica = next(m for m in cluster.members() if m.name != leader.name)
    cfg = _config(workdir, cluster, "good", f'sslmode = "verify-full"\nsslrootcert = "{good.cert}"')
    run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
    assert run.rc == 0, run
    assert_in_time(run, TIMEOUT)
    run2 = explain(dbcheck_bin, cfg, "pg_read", replica.pg_addr)
    assert run2.rc == 0, run2
    figures("PostgreSQL sslmode verify-full",
            f"writer UP in {run.report['elapsed_ms']:.0f} ms, replica read {run2.state}")


def test_another_ca_fails_closed_saying_why(workdir, tls, dbcheck_bin, figures):
    cluster, _, other = tls
    leader = cluster.wait_healthy()
    cfg = _config(workdir, cluster, "other", f'sslmode = "verify-full"\nsslrootcert = "{other.cert}"')
    run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
    assert run.rc == 1, run
    assert "certificate verify failed" in run.reason, run
    assert run.failure == "auth", run  # a trust problem, not the network
    assert_in_time(run, TIMEOUT)
    figures("PostgreSQL certificate from another CA", f"writer DOWN ({run.failure}): {run.reason[-120:]}")


def test_without_tls_the_server_refuses_the_check(workdir, tls, dbcheck_bin):
    cluster, _, _ = tls
    leader = cluster.wait_healthy()
    cfg = _config(workdir, cluster, "plain", 'sslmode = "disable"')
    run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
    assert run.rc == 1, run
    assert "no encryption" in run.reason, run


def test_a_missing_ca_file_is_a_configuration_error(workdir, tls, dbcheck_bin):
    cluster, _, _ = tls
    leader = cluster.wait_healthy()
    cfg = _config(workdir, cluster, "noca",
                  f'sslmode = "verify-full"\nsslrootcert = "{workdir}/no-such-ca.pem"')
    run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
    assert run.rc == 1, run
    assert run.failure == "config", run
    assert "no-such-ca.pem" in run.reason, run
