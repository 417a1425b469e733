"""Host names the managers report: Patroni advertising postgresql.connect_address as
a name, Sentinel with resolve-hostnames/announce-hostnames, both against HAProxy's addresses.
The names live in this machine's /etc/hosts (lab/hosts_file.py), so Patroni, libpq,
Redis, Sentinel and dbcheck all resolve them as they would in production. A silent DNS server
(the peer that "resolves slowly") is a UDP and TCP socket that never answers, in a mount
namespace whose /etc/resolv.conf points at it and whose /etc/hosts lacks the names."""

import functools
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import require_servers, started_cluster
from lab.agent import AgentProcess
from lab.dbcheck import (OUTER_SLACK, DbcheckRun, assert_in_time, explain,
                         write_dbcheck_config, write_redis_config)
from lab.hosts_file import etc_hosts, hosts_text_without_marks
from lab.patroni import PatroniCluster
from lab.redis import MASTER_NAME, RedisSentinelCluster

SUFFIX = ".dbcheck.test"
TIMEOUT = 0.8
SILENT_DNS = "127.0.0.9"  # a loopback address of its own: port 53 there is ours alone


@pytest.fixture(scope="module")
def names():
    """pg1..pg3 and redis1..redis2 <SUFFIX> -> 127.0.0.1 in /etc/hosts, for this module."""
    require_servers()
    with etc_hosts({f"{h}{SUFFIX}": "127.0.0.1"
                    for h in ("pg1", "pg2", "pg3", "redis1", "redis2")}):
        yield


@pytest.fixture(scope="module")
def named_pg(request, names):
    """A Patroni cluster whose members advertise PostgreSQL by host name."""
    yield from started_cluster(request, lambda p: PatroniCluster(p, name_suffix=SUFFIX),
                               "dbcheck-it-names-pg.", "Patroni cluster (host names)")


@pytest.fixture(scope="module")
def named_redis(request, names):
    """Redis + Sentinel where Sentinel monitors and announces the data nodes by host name."""
    yield from started_cluster(request, lambda p: RedisSentinelCluster(p, name_suffix=SUFFIX),
                               "dbcheck-it-names-redis.", "Redis Sentinel cluster (host names)")


def _resolve_step(run):
    steps = [s for s in run.report["steps"] if s["asked"].startswith("resolve ")]
    assert steps, f"no lookup step: {run}"
    return steps[0]


def test_patroni_members_advertised_by_name(workdir, named_pg, dbcheck_bin, figures):
    """Patroni's /cluster lists each member's host as its name; HAProxy passes addresses. The
    leader's name resolves to the leader's address alone: a writer; the others are not; a
    replica reads. Before host names were matched, every check here failed closed ("not this node")."""
    leader = named_pg.wait_healthy()
    view = named_pg.cluster_view()
    hosts = {m["name"]: m["host"] for m in view["members"]}
    assert all(h == f"{n}{SUFFIX}" for n, h in hosts.items()), hosts  # the setup is real
    cfg = write_dbcheck_config(workdir, named_pg, owner=None, timeout="800ms")
    run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
    assert run.rc == 0, run
    step = _resolve_step(run)
    assert f"{leader.name}{SUFFIX} -> 127.0.0.1" in step["answer"], step
    assert_in_time(run, TIMEOUT)
    replica = next(m for m in named_pg.members() if m.name != leader.name)
    run2 = explain(dbcheck_bin, cfg, "pg_write", replica.pg_addr)
    assert run2.rc == 1, run2
    assert (f"Patroni names {leader.name} ({leader.name}{SUFFIX} = {leader.pg_addr}) leader, "
            "not this node") in run2.reason, run2
    run3 = explain(dbcheck_bin, cfg, "pg_read", replica.pg_addr)
    assert run3.rc == 0, run3
    assert run3.state == "up", run3
    figures("Patroni connect_address host names",
            f"writer UP in {run.report['elapsed_ms']:.0f} ms (lookup {step['latency_ms']:.1f} ms), "
            f"replica read {run3.state}")


def test_sentinel_announcing_host_names(workdir, named_redis, dbcheck_bin, figures):
    """Sentinel with announce-hostnames answers GET-MASTER-ADDR-BY-NAME with the master's name,
    and the replica's ROLE names its master by name too (Sentinel's REPLICAOF): both compare
    by the one address the name resolves to."""
    master = named_redis.wait_stable()
    s1 = named_redis.sentinels()[0]
    raw = named_redis.sentinel_admin(s1, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
    assert raw[0] == named_redis.announced(master), raw  # the setup is real
    cfg = write_redis_config(workdir, named_redis, owner=None, timeout="800ms")
    run = explain(dbcheck_bin, cfg, "redis_write", master.addr)
    assert run.rc == 0, run
    assert f"{named_redis.announced(master)} -> 127.0.0.1" in _resolve_step(run)["answer"], run
    assert_in_time(run, TIMEOUT)
    replica = next(n for n in named_redis.nodes() if n != master)
    raw_role = named_redis.admin(replica, "ROLE")
    assert raw_role[1] == named_redis.announced(master), raw_role
    run2 = explain(dbcheck_bin, cfg, "redis_read", replica.addr)
    assert run2.rc == 0, run2
    run3 = explain(dbcheck_bin, cfg, "redis_write", replica.addr)
    assert run3.rc == 1, run3
    figures("Sentinel announce-hostnames",
            f"writer UP in {run.report['elapsed_ms']:.0f} ms; replica read {run2.state}; "
            f"replica as writer {run3.state} ({run3.failure})")


class SilentDns:
    """A name server that reads every question and never answers (UDP and TCP port 53)."""

    def __init__(self, ip):
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind((ip, 53))
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind((ip, 53))
        self.tcp.listen(16)
        self.questions = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        self.udp.settimeout(0.1)
        while not self._stop.is_set():
            try:
                self.udp.recvfrom(4096)
                self.questions += 1
            except socket.timeout:
                continue
            except OSError:
                return

    def close(self):
        self._stop.set()
        self._thread.join(2)
        self.udp.close()
        self.tcp.close()


def silent_namespace(workdir):
    """The argv prefix that runs a command (exec'd in place: same PID) in a mount namespace
    whose /etc/hosts lacks the test names and whose only name server is SILENT_DNS."""
    hosts = workdir / "hosts"
    hosts.write_text(hosts_text_without_marks())
    resolv = workdir / "resolv.conf"
    resolv.write_text(f"nameserver {SILENT_DNS}\noptions timeout:5 attempts:2\n")
    script = ('mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/resolv.conf && shift 2 '
              '&& exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
            str(hosts), str(resolv)]


def test_a_silent_name_server_costs_the_check_its_deadline_not_more(workdir, named_pg, dbcheck_bin,
                                                                    figures):
    """The members' names are not in this namespace's /etc/hosts and its only name server
    never answers: the lookup is abandoned at the check's deadline, the writer fails closed
    and says which name did not resolve, within the deadline by the check's own clock."""
    leader = named_pg.wait_healthy()
    cfg = write_dbcheck_config(workdir, named_pg, owner=None, timeout="800ms")
    replica = next(m for m in named_pg.members() if m.name != leader.name)
    place = silent_namespace(workdir)

    def explain_there(backend, addr):
        argv = [*place, str(dbcheck_bin), "--config", str(cfg), "explain", backend, addr, "--json"]
        t0 = time.monotonic()
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10 + OUTER_SLACK,
                           env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})
        return DbcheckRun(p.returncode, p.stdout, p.stderr, time.monotonic() - t0)

    dns = SilentDns(SILENT_DNS)
    try:
        run = explain_there("pg_write", leader.pg_addr)
        # The reader: its own member unresolved, and the leader's name never handed to libpq
        # (which would resolve it with no deadline of ours).
        reader = explain_there("pg_read", replica.pg_addr)
    finally:
        dns.close()
    assert reader.rc == 1, reader
    assert_in_time(reader, TIMEOUT)
    assert run.rc == 1, run
    assert run.failure == "network", run
    assert (f"{leader.name}{SUFFIX} did not resolve: no answer before the deadline"
            in run.reason), run
    assert "whether that is this node is not known" in run.reason, run
    assert dns.questions > 0, "the lookup never reached the silent name server"
    assert_in_time(run, TIMEOUT)
    figures("silent name server",
            f"writer DOWN ({run.failure}) in {run.report['elapsed_ms']:.0f} ms of an 800 ms "
            f"deadline, reader DOWN in {reader.report['elapsed_ms']:.0f} ms; {dns.questions} "
            "question(s) unanswered")


def test_sentinel_failover_between_named_nodes(workdir, named_redis, dbcheck_bin, figures):
    """After a Sentinel failover the new master is the replica Sentinel learnt by the name it
    announces (replica-announce-ip): the writer follows it, the old master is not a writer."""
    old = named_redis.wait_stable()
    cfg = write_redis_config(workdir, named_redis, owner=None, timeout="800ms")
    named_redis.failover()
    new = named_redis.wait_stable(not_master=old)
    raw = named_redis.sentinel_admin(named_redis.sentinels()[0], "SENTINEL",
                                     "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
    assert raw[0] == named_redis.announced(new), raw  # named, not by address
    run = explain(dbcheck_bin, cfg, "redis_write", new.addr)
    assert run.rc == 0, run
    run2 = explain(dbcheck_bin, cfg, "redis_write", old.addr)
    assert run2.rc == 1, run2
    assert run2.failure == "role", run2
    figures("Sentinel announce-hostnames failover",
            f"new master {new.name} writer UP; old master {old.name} {run2.state} ({run2.failure})")


def test_sentinels_named_behind_a_silent_name_server(workdir, redis_cluster, dbcheck_bin, agent_bin,
                                                     figures):
    """Sentinels configured by names that never resolve: hiredis would resolve them
    itself, with no timeout (glibc's: 5 s x 2 attempts here). Resolved first within the
    deadline, the check holds its deadline by its own clock and says which name did not
    resolve; the agent, whose Sentinel watcher connects to them every second, reloads (SIGHUP)
    and stops (SIGTERM twice) promptly instead of waiting for glibc to give up."""
    master = redis_cluster.wait_stable()
    named = [f"sentinel{i}{SUFFIX}:{s.addr.rsplit(':', 1)[1]}"
             for i, s in enumerate(redis_cluster.sentinels(), 1)]
    cfg = write_redis_config(workdir / "check", redis_cluster, owner=None, timeout="800ms",
                             sentinels=named)
    place = silent_namespace(workdir)
    dns = SilentDns(SILENT_DNS)
    try:
        t0 = time.monotonic()
        p = subprocess.run([*place, str(dbcheck_bin), "--config", str(cfg), "explain", "redis_write",
                            master.addr, "--json"], capture_output=True, text=True,
                           timeout=10 + OUTER_SLACK, env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})
        run = DbcheckRun(p.returncode, p.stdout, p.stderr, time.monotonic() - t0)

        writer = functools.partial(write_redis_config, cluster=redis_cluster, owner=None,
                                   timeout="800ms", sentinels=named)
        agent = AgentProcess(workdir, "agent-silent", agent_bin, writer, "cache", master.addr,
                             place=place, interval="1s").start(timeout=30)
        try:
            time.sleep(2.5)  # the watcher's threads are now (re)connecting to the names
            t0 = time.monotonic()
            agent.reconfigure(master.addr, timeout=15, sentinels=named)
            reload_s = time.monotonic() - t0
            time.sleep(1.5)
            agent.daemon.signal_stop(signal.SIGTERM)  # drain for shutdown_grace...
            time.sleep(0.3)  # (two signals sent at once would merge into one)
            t0 = time.monotonic()
            agent.daemon.signal_stop(signal.SIGTERM)  # ...and the second stops it now
            rc = agent.daemon.popen.wait(20)
            stop_s = time.monotonic() - t0
        finally:
            agent.stop()
        log = agent.log_text()
    finally:
        dns.close()
    assert dns.questions > 0, "the lookups never reached the silent name server"
    assert run.rc == 1 and run.state == "down", run
    assert run.reason.split(": ")[0] in ("Sentinels timed out", "cannot reach Sentinels"), run
    assert "0 of 3 name this node master" in run.reason, run
    steps = [s for s in run.report["steps"] if s["opinion"] == "manager"]
    assert any(f"sentinel1{SUFFIX} did not resolve" in s["answer"] for s in steps), steps
    assert_in_time(run, TIMEOUT)
    assert f"sentinel1{SUFFIX} did not resolve" in log, log[-3000:]
    assert reload_s < 3.0, f"reload took {reload_s:.1f}s"
    assert rc == 0 and stop_s < 3.0, (rc, stop_s)
    figures("Sentinels named behind a silent name server",
            f"writer DOWN ({run.failure}) in {run.report['elapsed_ms']:.0f} ms of 800; agent "
            f"reloaded in {reload_s * 1000:.0f} ms, stopped in {stop_s * 1000:.0f} ms; "
            f"{dns.questions} question(s) unanswered")
