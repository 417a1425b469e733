"""The PostgreSQL node over TLS: a Patroni cluster whose PostgreSQL serves a certificate from a
test CA and takes TCP clients over TLS only (hostssl). The check with sslmode = "verify-full"
and that CA passes; with another CA it fails closed saying why; without TLS the server itself
refuses it (so the passing check really ran over TLS). The role CERT_USER logs in with a client
certificate only (pg_hba cert): with sslcert/sslkey and no password the check passes; a
certificate from another CA, or for another user, fails with failure auth."""

import functools
import shutil
from pathlib import Path

import pytest

from conftest import started_cluster
from lab.agent import AgentProcess
from lab.dbcheck import assert_in_time, explain, write_dbcheck_config
from lab.patroni import CERT_USER, PatroniCluster
from lab.procs import wait_until
from lab.ca import issue, make_ca

TIMEOUT = 0.8


@pytest.fixture(scope="module")
def tls(request):
    """(cluster, good CA, other CA, client certificates): PostgreSQL serving a certificate for
    127.0.0.1 and localhost, signed by the good CA, which it also trusts for client
    certificates. The clients: "good" (good CA, CN CERT_USER), "other_ca" (other CA, same CN),
    "other_cn" (good CA, CN of another user); keys 0600, owned by root."""
    cas, clients = {}, {}

    def make(path):
        certs = path / "certs"
        cas["good"], cas["other"] = make_ca(certs, "good"), make_ca(certs, "other")
        server = issue(cas["good"], certs, "server", ["IP:127.0.0.1", "DNS:localhost"])
        for name, ca, cn in (("good", "good", CERT_USER), ("other_ca", "other", CERT_USER),
                             ("other_cn", "good", "someone_else")):
            (certs / name).mkdir(mode=0o755)
            clients[name] = issue(cas[ca], certs / name, cn, ["DNS:localhost"], client=True)
        certs.chmod(0o755)
        for f in (server.cert, server.key):
            shutil.chown(f, "postgres", "postgres")
        return PatroniCluster(path, pg_tls=server, pg_client_ca=cas["good"])
    for cluster in started_cluster(request, make, "dbcheck-it-pg-tls.", "Patroni cluster (TLS)"):
        yield cluster, cas["good"], cas["other"], clients


def _config(workdir, cluster, name, extra):
    return write_dbcheck_config(workdir / name, cluster, owner=None, timeout="800ms",
                                cluster_extra=extra)


def test_verify_full_with_the_clusters_ca(workdir, tls, dbcheck_bin, figures):
    cluster, good, _, _ = tls
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
    cluster, _, other, _ = tls
    leader = cluster.wait_healthy()
    cfg = _config(workdir, cluster, "other", f'sslmode = "verify-full"\nsslrootcert = "{other.cert}"')
    run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
    assert run.rc == 1, run
    assert "certificate verify failed" in run.reason, run
    assert run.failure == "auth", run  # a trust problem, not the network
    assert_in_time(run, TIMEOUT)
    figures("PostgreSQL certificate from another CA", f"writer DOWN ({run.failure}): {run.reason[:120]}")


def test_without_tls_the_server_refuses_the_check(workdir, tls, dbcheck_bin):
    cluster, _, _, _ = tls
    leader = cluster.wait_healthy()
    cfg = _config(workdir, cluster, "plain", 'sslmode = "disable"')
    run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
    assert run.rc == 1, run
    assert "no encryption" in run.reason, run


def test_a_missing_ca_file_is_a_configuration_error(workdir, tls, dbcheck_bin):
    cluster, _, _, _ = tls
    leader = cluster.wait_healthy()
    cfg = _config(workdir, cluster, "noca",
                  f'sslmode = "verify-full"\nsslrootcert = "{workdir}/no-such-ca.pem"')
    run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
    assert run.rc == 1, run
    assert run.failure == "config", run
    assert "no-such-ca.pem" in run.reason, run


def _cert_config(directory, cluster, good_ca, client, owner=None, extra=""):
    """Write <directory>/dbcheck.toml logging in as CERT_USER with `client`'s certificate and a
    copy of its key (0600, owned by `owner`; None: root), no password_file, over verify-full;
    `extra` is appended (an [agent] section). Returns the config's path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    key = directory / "client.key"
    shutil.copyfile(client.key, key)
    key.chmod(0o600)
    if owner:
        shutil.chown(key, owner, owner)
    return write_dbcheck_config(
        directory, cluster, owner=None, timeout="800ms", user=CERT_USER, password=None, extra=extra,
        cluster_extra=f'sslmode = "verify-full"\nsslrootcert = "{good_ca.cert}"\n'
                      f'sslcert = "{client.cert}"\nsslkey = "{key}"')


def test_a_client_certificate_logs_in_without_a_password(workdir, tls, dbcheck_bin, figures):
    cluster, good, _, clients = tls
    leader = cluster.wait_healthy()
    replica = next(m for m in cluster.members() if m.name != leader.name)
    # As HAProxy's user, owning its key (0600): dbcheck's rules at load and libpq's own.
    cfg = _cert_config(workdir / "cert", cluster, good, clients["good"], owner="haproxy")
    run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
    assert run.rc == 0, run
    assert_in_time(run, TIMEOUT)
    # explain says how it logged in: the certificate's path, never the key's content.
    assert run.report["auth"] == f"user {CERT_USER}: client certificate {clients['good'].cert}", run
    assert "PRIVATE KEY" not in run.stdout + run.stderr
    run2 = explain(dbcheck_bin, cfg, "pg_read", replica.pg_addr)
    assert run2.rc == 0, run2
    figures("PostgreSQL client certificate (pg_hba cert, no password)",
            f"writer UP in {run.report['elapsed_ms']:.0f} ms, replica read {run2.state}")


# What the server's refusal reads like: the TLS handshake's alert for a CA it does not trust,
# pg_hba's cert method for a CN that is not the user.
@pytest.mark.parametrize("client,why", [("other_ca", "alert unknown ca"),
                                        ("other_cn", "certificate authentication failed")])
def test_a_certificate_the_server_refuses_fails_with_auth(workdir, tls, dbcheck_bin, figures,
                                                          client, why):
    cluster, good, _, clients = tls
    leader = cluster.wait_healthy()
    cfg = _cert_config(workdir / f"cert-{client}", cluster, good, clients[client])
    run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
    assert run.rc == 1, run
    assert run.failure == "auth", run  # the server's refusal of who we are, not the network
    assert why in run.reason, run
    assert_in_time(run, TIMEOUT)
    figures(f"PostgreSQL client certificate ({client})",
            f"writer DOWN ({run.failure}): {run.reason[:110]}")


def test_the_agent_logs_in_with_the_client_certificate(workdir, tls, agent_bin):
    """The agent shares the check's probe: its kept connections present the certificate too."""
    cluster, good, _, clients = tls
    leader = cluster.wait_healthy()
    writer = functools.partial(_cert_config, cluster=cluster, good_ca=good, client=clients["good"])
    agent = AgentProcess(workdir, "agent-cert", agent_bin, writer, "pg", leader.pg_addr)
    try:
        agent.start()
        wait_until(lambda: agent.ask("pg_write").startswith("up"), 15, "the agent answers up for the writer",
                   daemons=[agent.daemon])
        assert agent.health()["backends"]["pg_write"]["last_round"]["failure"] == "none"
    finally:
        agent.stop()
