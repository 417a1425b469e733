"""Patroni's REST API over https: a cluster whose members serve a certificate from a
test CA, require a client certificate from it (restapi.verify_client: required) and basic auth
on their unsafe endpoints. The checks present the client certificate (patroni_certfile,
patroni_keyfile) and trust the CA (patroni_cafile); `dbcheck switchover` authenticates its
POST /switchover (operator_user). Without the client certificate the members refuse the
check, and it fails closed saying so."""

import shutil
import subprocess

import pytest

from conftest import started_cluster
from lab.dbcheck import assert_in_time, explain, operator_lines, write_dbcheck_config
from lab.patroni import PatroniCluster, RestTls
from lab.procs import wait_until
from lab.ca import issue, make_ca

TIMEOUT = 0.8


@pytest.fixture(scope="module")
def tls_cluster(request):
    def make(path):
        certs = path / "certs"
        ca = make_ca(certs, "patroni")
        rest = RestTls(ca=ca,
                       server=issue(ca, certs, "rest-server", ["IP:127.0.0.1", "DNS:localhost"]),
                       client=issue(ca, certs, "rest-client", ["DNS:dbcheck"], client=True))
        certs.chmod(0o755)
        for issued in (rest.server, rest.client):
            shutil.chown(issued.cert, "postgres", "postgres")
            shutil.chown(issued.key, "postgres", "postgres")
        return PatroniCluster(path, rest_tls=rest)
    yield from started_cluster(request, make, "dbcheck-it-patroni-tls.", "Patroni cluster (https)")


def _tls_lines(rest, client=True):
    lines = f'patroni_cafile = "{rest.ca.cert}"'
    if client:
        lines += f'\npatroni_certfile = "{rest.client.cert}"\npatroni_keyfile = "{rest.client.key}"'
    return lines


def test_https_with_a_client_certificate(workdir, tls_cluster, dbcheck_bin, figures):
    rest = tls_cluster.rest_tls
    leader = tls_cluster.wait_healthy()
    assert all(m.rest_url.startswith("https://") for m in tls_cluster.members())
    replica = next(m for m in tls_cluster.members() if m.name != leader.name)
    cfg = write_dbcheck_config(workdir, tls_cluster, owner=None, cluster_extra=_tls_lines(rest))
    run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
    assert run.rc == 0, run
    assert any(s["asked"] == "GET /primary" and s["peer"].startswith("https://")
               for s in run.report["steps"]), run.report["steps"]
    assert_in_time(run, TIMEOUT)
    run2 = explain(dbcheck_bin, cfg, "pg_read", replica.pg_addr)
    assert run2.rc == 0, run2
    figures("Patroni REST over https, client certificate required",
            f"writer UP in {run.report['elapsed_ms']:.0f} ms; replica read {run2.state}")


def test_without_the_client_certificate_the_members_refuse(workdir, tls_cluster, dbcheck_bin,
                                                           figures):
    rest = tls_cluster.rest_tls
    leader = tls_cluster.wait_healthy()
    cfg = write_dbcheck_config(workdir, tls_cluster, owner=None,
                               cluster_extra=_tls_lines(rest, client=False))
    run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
    assert run.rc == 1, run
    assert "no Patroni member gave a usable answer" in run.reason, run
    assert_in_time(run, TIMEOUT)
    figures("Patroni REST without the client certificate", f"writer DOWN ({run.failure}): {run.reason[:150]}")


def test_switchover_authenticates_to_patroni(workdir, tls_cluster, dbcheck_bin, figures):
    """POST /switchover needs basic auth: the wrong password is refused by Patroni (401) and
    nothing moves; the operator's own moves the leader."""
    rest = tls_cluster.rest_tls
    old = tls_cluster.wait_healthy()
    wrong = write_dbcheck_config(
        workdir / "wrong", tls_cluster, owner=None,
        cluster_extra=_tls_lines(rest) + "\n" + operator_lines(workdir / "wrong-op", rest.user, "not-it"))
    res = subprocess.run([str(dbcheck_bin), "--config", str(wrong), "switchover", "pg"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0, res.stdout
    assert "401" in res.stdout + res.stderr, res.stdout + res.stderr
    assert tls_cluster.wait_healthy().name == old.name  # nothing moved
    good = write_dbcheck_config(
        workdir / "good", tls_cluster, owner=None,
        cluster_extra=_tls_lines(rest) + "\n" + operator_lines(workdir / "good-op", rest.user, rest.password))
    res = subprocess.run([str(dbcheck_bin), "--config", str(good), "switchover", "pg"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    new = wait_until(lambda: (lambda m: m if m and m.name != old.name else None)(tls_cluster.leader()),
                     60, "a new leader")
    tls_cluster.wait_healthy(90)  # the old leader back as a replica before the module stops it
    figures("dbcheck switchover against an authenticating Patroni (https, client certificate)",
            f"wrong password refused (401), leader stayed {old.name}; operator's password: "
            f"leader {old.name} -> {new.name}")
