"""Redis and Sentinel over TLS only: data nodes and Sentinels with `port 0` and a `tls-port`,
client certificates required (tls-auth-clients yes), replication and Sentinel links over TLS
too. dbcheck verifies each peer against the test CA and presents its own certificate: the
writer and the reader route through a real HAProxy; another CA fails closed with failure auth;
a missing file is a configuration error; a plain-text Sentinel under require_tls is refused at
load. The plain ports are off, so a passing check really ran over TLS."""

import functools
import shutil
import socket
import subprocess
import threading
import time
from types import SimpleNamespace

import pytest

from conftest import started_cluster
from lab.agent import AgentProcess, http_get
from lab import redis as redis_fx
from lab.dbcheck import explain, operator_lines, run_dbcheck, write_check_wrapper, write_redis_config
from lab.haproxy import render_redis_example_for
from lab.ports import free_ports
from lab.procs import wait_until
from lab.redis import RedisSentinelCluster, TlsFiles
from lab.ca import issue, make_ca

ROUTING_TIMEOUT = 30  # rise x inter plus ample slack for a loaded machine


@pytest.fixture(scope="module")
def tls_redis(request):
    """Namespace(cluster, good, other, client): the cluster serving a certificate for
    127.0.0.1 from the good CA, which it also requires of its clients; `client` is dbcheck's
    certificate from the good CA, its key 0600 owned by haproxy (the check runs as haproxy)."""
    made = {}

    def make(path):
        certs = path / "certs"
        good, other = make_ca(certs, "good"), make_ca(certs, "other")
        server = issue(good, certs, "redis", ["IP:127.0.0.1", "DNS:localhost"], client="both")
        (certs / "client").mkdir(mode=0o755)
        client = issue(good, certs / "client", "healthcheck", ["DNS:localhost"], client=True)
        certs.chmod(0o755)
        for f in (server.cert, server.key):
            shutil.chown(f, "redis", "redis")
        shutil.chown(client.key, "haproxy", "haproxy")
        made.update(good=good, other=other, client=client)
        return RedisSentinelCluster(path, tls=TlsFiles(good.cert, server.cert, server.key))

    for cluster in started_cluster(request, make, "dbcheck-it-redis-tls.", "Redis cluster (TLS)"):
        yield SimpleNamespace(cluster=cluster, **made)


def tls_lines(t, prefix, ca=None):
    """The [cluster] lines of TLS to the data nodes (prefix "") or Sentinels ("sentinel_")."""
    return (f'{prefix}tls = true\n{prefix}tls_ca_cert_file = "{ca or t.good.cert}"\n'
            f'{prefix}tls_cert_file = "{t.client.cert}"\n{prefix}tls_key_file = "{t.client.key}"')


def _config(workdir, t, name, node_ca=None, sentinel_ca=None, extra="require_tls = true"):
    lines = "\n".join(x for x in (tls_lines(t, "", node_ca), tls_lines(t, "sentinel_", sentinel_ca),
                                  extra) if x)
    return write_redis_config(workdir / name, t.cluster, cluster_extra=lines)


def test_writer_and_reader_over_tls(workdir, tls_redis, dbcheck_bin, figures):
    master = tls_redis.cluster.wait_stable()
    replica = next(n for n in tls_redis.cluster.nodes() if n != master)
    cfg = _config(workdir, tls_redis, "good")
    run = explain(dbcheck_bin, cfg, "redis_write", master.addr)
    assert run.rc == 0, run
    peers = [s["peer"] for s in run.report["steps"]]
    assert f"{master.addr} (TLS)" in peers, peers  # explain says the link is TLS
    assert sum(p.endswith("(TLS)") for p in peers) == len(peers), peers
    read = explain(dbcheck_bin, cfg, "redis_read", replica.addr)
    assert read.rc == 0, read
    wrong = explain(dbcheck_bin, cfg, "redis_write", replica.addr)
    assert wrong.rc == 1 and wrong.failure == "role", wrong
    figures("Redis over TLS (explain)", f"writer UP in {run.report['elapsed_ms']:.0f} ms, "
            f"reader UP in {read.report['elapsed_ms']:.0f} ms")


def test_haproxy_routes_writer_and_reader(workdir, tls_redis, dbcheck_bin, haproxy_factory):
    master = tls_redis.cluster.wait_stable()
    replica = next(n for n in tls_redis.cluster.nodes() if n != master)
    cfg = _config(workdir, tls_redis, "haproxy-check")
    wrapper = write_check_wrapper(workdir / "haproxy-check" / "dbcheck-wrapper", dbcheck_bin, cfg)
    text, _ = render_redis_example_for(tls_redis.cluster, wrapper, workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(text)
    wait_until(lambda: hap.servers_up("redis_write") == [master.name], ROUTING_TIMEOUT,
               f"redis_write has exactly {master.name} UP")
    wait_until(lambda: hap.servers_up("redis_read") == [replica.name], ROUTING_TIMEOUT,
               f"redis_read has exactly {replica.name} UP")


def _subscriptions(agent):
    """dbcheck_sentinel_subscriptions_total of the cluster "cache" from the agent's /metrics."""
    for line in http_get(agent.http_port, "/metrics")[1].splitlines():
        if line.startswith('dbcheck_sentinel_subscriptions_total{cluster="cache"}'):
            return int(float(line.split()[-1]))
    return 0


def test_the_agent_probes_and_subscribes_over_tls(workdir, tls_redis, agent_bin):
    """dbcheck-agent's kept links and its Sentinel subscriptions (PSUBSCRIBE) run over TLS."""
    master = tls_redis.cluster.wait_stable()
    lines = "\n".join((tls_lines(tls_redis, ""), tls_lines(tls_redis, "sentinel_"), "require_tls = true"))
    writer = functools.partial(write_redis_config, cluster=tls_redis.cluster, owner=None,
                               cluster_extra=lines)
    agent = AgentProcess(workdir, "agent-tls", agent_bin, writer, "cache", master.addr, interval="1s")
    try:
        agent.start()
        wait_until(lambda: agent.ask("redis_write").startswith("up"), 15, "the agent says up")
        wait_until(lambda: _subscriptions(agent) >= 3, 15, "every Sentinel subscribed")
        assert agent.ask("redis_read").startswith("down"), agent.ask("redis_read")
    finally:
        agent.stop()


def test_another_ca_fails_closed_with_auth(workdir, tls_redis, dbcheck_bin):
    master = tls_redis.cluster.wait_stable()
    cfg = _config(workdir, tls_redis, "other-node-ca", node_ca=tls_redis.other.cert)
    run = explain(dbcheck_bin, cfg, "redis_write", master.addr)
    assert run.rc == 1, run
    assert run.failure == "auth", run
    node = next(s for s in run.report["steps"] if s["opinion"] == "node")
    assert "cannot trust the server's certificate" in node["answer"], node
    assert "self-signed certificate in certificate chain" in node["answer"], node  # OpenSSL's why

    cfg = _config(workdir, tls_redis, "other-sentinel-ca", sentinel_ca=tls_redis.other.cert)
    run = explain(dbcheck_bin, cfg, "redis_write", master.addr)
    assert run.rc == 1, run
    assert run.failure == "auth", run


def _node_step(run):
    return next(s for s in run.report["steps"] if s["opinion"] == "node")


def test_the_name_or_address_is_verified(workdir, tls_redis, dbcheck_bin):
    """The certificate is from the right CA, but it must also carry the name dbcheck checks:
    127.0.0.1 (the address, by default) or localhost pass; another name or address does not."""
    master = tls_redis.cluster.wait_stable()
    by_name = _config(workdir, tls_redis, "name-ok",
                      extra='require_tls = true\ntls_server_name = "localhost"')
    run = explain(dbcheck_bin, by_name, "redis_write", master.addr)
    assert run.rc == 0, run  # a DNS name: SNI and SSL_set1_host
    wrong = _config(workdir, tls_redis, "name-wrong",
                    extra='require_tls = true\ntls_server_name = "wrong.example"')
    run = explain(dbcheck_bin, wrong, "redis_write", master.addr)
    assert run.rc == 1 and run.failure == "auth", run
    assert "hostname mismatch" in _node_step(run)["answer"], run
    assert "set tls_server_name" in _node_step(run)["answer"], run
    other_ip = _config(workdir, tls_redis, "ip-wrong",
                       extra='require_tls = true\ntls_server_name = "127.0.0.2"')
    run = explain(dbcheck_bin, other_ip, "redis_write", master.addr)
    assert run.rc == 1 and run.failure == "auth", run
    assert "IP address mismatch" in _node_step(run)["answer"], run
    sentinels = _config(workdir, tls_redis, "sentinel-name-wrong",
                        extra='require_tls = true\nsentinel_tls_server_name = "wrong.example"')
    run = explain(dbcheck_bin, sentinels, "redis_write", master.addr)
    assert run.rc == 1, run
    asked = [s for s in run.report["steps"] if s["opinion"] == "manager"]
    assert asked and all("hostname mismatch" in s["answer"] for s in asked), asked


def test_a_plain_port_is_named_as_such(workdir, tls_redis, dbcheck_bin):
    """tls = true against a port that does not speak TLS (here: a plain listener that closes at
    once, as a plain Redis does on garbage) is not "cannot reach": it names the port."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", free_ports(1)[0]))
    srv.listen(4)

    def answer_plain():
        for _ in range(4):
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conn.recv(4096)
            conn.sendall(b"-ERR Protocol error: invalid multibulk length\r\n")
            conn.close()
    threading.Thread(target=answer_plain, daemon=True).start()
    try:
        cfg = _config(workdir, tls_redis, "plain-port")
        run = explain(dbcheck_bin, cfg, "redis_read", f"127.0.0.1:{srv.getsockname()[1]}")
    finally:
        srv.close()
    assert run.rc == 1 and run.failure == "protocol", run
    assert "does not speak TLS on this port" in _node_step(run)["answer"], run


def test_optional_client_certificates_keep_kept_links_honest(workdir, tls_redis, agent_bin):
    """tls-auth-clients optional: the server asks for a certificate on every handshake and takes
    the session without one. The agent's kept link killed by the server is a network failure,
    retried on a fresh link: the agent stays up and never blames a certificate."""
    cluster = tls_redis.cluster
    master = cluster.wait_stable()
    for n in cluster.nodes():
        cluster.admin(n, "CONFIG", "SET", "tls-auth-clients", "optional")
    try:
        lines = "\n".join((f'tls = true\ntls_ca_cert_file = "{tls_redis.good.cert}"',
                           tls_lines(tls_redis, "sentinel_"), "require_tls = true"))
        writer = functools.partial(write_redis_config, cluster=cluster, owner=None, cluster_extra=lines)
        agent = AgentProcess(workdir, "agent-optional", agent_bin, writer, "cache", master.addr,
                             interval="1s")
        try:
            agent.start()
            wait_until(lambda: agent.ask("redis_write").startswith("up"), 15, "the agent says up")
            for _ in range(3):
                cluster.admin(master, "CLIENT", "KILL", "TYPE", "normal")
                answers = []
                for _ in range(15):
                    answers.append(agent.ask("redis_write"))
                    time.sleep(0.2)
                assert all(a.startswith("up") for a in answers), answers
            status = http_get(agent.http_port, "/health")[1]
            assert "client certificate" not in status, status
        finally:
            agent.stop()
    finally:
        for n in cluster.nodes():
            cluster.admin(n, "CONFIG", "SET", "tls-auth-clients", "yes")


def test_no_client_certificate_fails_with_auth(workdir, tls_redis, dbcheck_bin):
    """tls-auth-clients yes: without a certificate the server ends the session (TLS 1.3: at the
    first read, with an alert), a trust problem like a wrong CA."""
    master = tls_redis.cluster.wait_stable()
    cfg = write_redis_config(workdir / "no-cert", tls_redis.cluster, cluster_extra="\n".join((
        f'tls = true\ntls_ca_cert_file = "{tls_redis.good.cert}"', tls_lines(tls_redis, "sentinel_"))))
    run = explain(dbcheck_bin, cfg, "redis_write", master.addr)
    assert run.rc == 1, run
    assert run.failure == "auth", run
    node = next(s for s in run.report["steps"] if s["opinion"] == "node")
    assert ("the server refused our certificate" in node["answer"]  # its alert was read
            or "the server asked for a client certificate and none is configured" in node["answer"]), node


def test_a_missing_file_is_a_configuration_error(workdir, tls_redis, dbcheck_bin):
    master = tls_redis.cluster.wait_stable()
    cfg = _config(workdir, tls_redis, "noca", node_ca=f"{workdir}/no-such-ca.pem")
    run = explain(dbcheck_bin, cfg, "redis_write", master.addr)
    assert run.rc == 2, run  # dbcheck's exit code for a configuration error: no check ran
    assert "cluster.cache.tls_ca_cert_file: cannot read CA bundle" in run.stderr, run
    assert "no-such-ca.pem: No such file or directory" in run.stderr, run


def test_a_plain_sentinel_under_require_tls_is_refused(workdir, tls_redis, dbcheck_bin):
    master = tls_redis.cluster.wait_stable()
    cfg = write_redis_config(workdir / "plain-sentinel", tls_redis.cluster,
                             cluster_extra=tls_lines(tls_redis, "") + "\nrequire_tls = true")
    run = run_dbcheck(dbcheck_bin, cfg, "config-check")
    assert run.rc != 0, run
    assert "cluster.cache.sentinel_tls: the links to the Sentinels are plain text" in \
        run.stdout + run.stderr, run
    check = explain(dbcheck_bin, cfg, "redis_write", master.addr)
    assert check.rc == 2, check  # a configuration error: no check ran


def test_switchover_over_tls(workdir, tls_redis, dbcheck_bin):
    """`dbcheck switchover`: CLIENT PAUSE, SENTINEL FAILOVER and the checks it waits on, all
    over TLS. Last: it moves the master."""
    old = tls_redis.cluster.wait_settled()
    extra = operator_lines(workdir / "operator", redis_fx.OPERATOR_USER, redis_fx.OPERATOR_PASSWORD)
    lines = "\n".join((tls_lines(tls_redis, ""), tls_lines(tls_redis, "sentinel_"), "require_tls = true",
                       extra))
    cfg = write_redis_config(workdir / "operator-cfg", tls_redis.cluster, owner=None, cluster_extra=lines)
    res = subprocess.run([str(dbcheck_bin), "--config", str(cfg), "switchover", "cache"],
                         capture_output=True, text=True, timeout=90, env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stdout + res.stderr
    new = tls_redis.cluster.wait_stable(not_master=old)
    assert new != old
