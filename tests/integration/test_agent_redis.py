"""dbcheck-agent on every Redis data node, behind a real HAProxy 2.6 loading
haproxy-examples/redis-sentinel-agent.cfg; Sentinel events drive re-probes."""

import functools
import os
import signal
import socket
import struct
import threading
import time

import pytest

from lab.agent import (AgentProcess, agent_ask, http_get, render_redis_agent_example, start_redis_agents,
                       stop_agents)
from lab.dbcheck import write_redis_config
from lab.procs import wait_until
from lab.sampler import Sampler


@pytest.fixture
def redis_agents(workdir, redis_cluster, agent_bin):
    redis_cluster.wait_stable()
    agents = start_redis_agents(workdir, redis_cluster, agent_bin, interval="1s")
    yield agents
    stop_agents(agents)  # all at once; fails on a sanitizer report in an agent's log


def test_failover_through_haproxy_with_agents(redis_cluster, redis_agents, haproxy_factory, workdir, figures):
    old = redis_cluster.wait_stable()
    cfg, _ = render_redis_agent_example(redis_cluster, redis_agents, workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(cfg)
    hap.wait_until_checked("redis_write", timeout=30)
    wait_until(lambda: hap.servers_up("redis_write") == [old.name], 30, f"{old.name} alone UP")
    old_agent = next(a for a in redis_agents if a.name == f"agent-{old.name}")
    with Sampler(hap, "redis_write") as s:
        time.sleep(1)
        t0 = time.monotonic()
        new = redis_cluster.failover()
        # The old master's own agent drops it from its cached verdict on the Sentinels' event
        # (that it came from one is asserted on the agent's log below; the bound is loose).
        wait_until(lambda: old_agent.ask("redis_write").startswith("down"), 15,
                   "the old master's agent says down")
        t_agent = time.monotonic() - t0
        wait_until(lambda: hap.servers_up("redis_write") == [new.name], 30, f"{new.name} alone UP")
        t_routed = time.monotonic() - t0
        time.sleep(1)
    during = [up for t, up in s.samples if t >= t0]
    double = [up for up in during if len(up) > 1]
    t_out = s.first(lambda up: old.name not in up, since=t0)[0] - t0
    assert double == [], s.transitions()
    assert "sentinel event" in old_agent.log_text(), "no Sentinel event reached the agent"
    figures("agent: Redis SENTINEL FAILOVER through HAProxy",
            f"old master's agent answered down {t_agent * 1000:.0f} ms after the request (Sentinel "
            f"events); HAProxy took it out at +{t_out:.1f}s and routed to the new master at "
            f"+{t_routed:.1f}s; two writers UP in {len(double)} of {len(during)} samples")
    redis_cluster.wait_stable(timeout=40)


def _check_commands(cluster, node):
    """Calls of the commands dbcheck sends (ROLE, PING, AUTH) on `node`, from INFO commandstats."""
    stats = cluster.admin(node, "INFO", "commandstats")
    total = 0
    for line in stats.splitlines():
        if line.startswith(("cmdstat_role:", "cmdstat_ping:", "cmdstat_auth:")):
            total += int(line.split("calls=")[1].split(",")[0])
    return total


def test_pollers_do_not_multiply_redis_commands(redis_cluster, redis_agents, figures):
    master = redis_cluster.wait_stable()
    a = next(x for x in redis_agents if x.name == f"agent-{master.name}")
    rates = {}
    for pollers in (1, 100):
        stop, answered = threading.Event(), []

        def poll():
            while not stop.is_set():
                try:
                    agent_ask(a.agent_port, b"redis_write\n", timeout=2)
                    answered.append(1)
                except OSError:
                    pass
                stop.wait(0.01)

        threads = [threading.Thread(target=poll, daemon=True) for _ in range(pollers)]
        for t in threads:
            t.start()
        time.sleep(1)
        c0, t0 = _check_commands(redis_cluster, master), time.monotonic()
        time.sleep(5)
        c1, t1 = _check_commands(redis_cluster, master), time.monotonic()
        stop.set()
        for t in threads:
            t.join(5)
        rates[pollers] = ((c1 - c0) / (t1 - t0), len(answered) / 6)
    # The premise: 100 pollers asked many times more often (how many more depends on the CPU
    # the machine leaves this test's threads).
    assert rates[100][1] > 5 * rates[1][1], rates
    assert rates[100][0] <= rates[1][0] * 1.5 + 1, rates
    figures("agent pollers vs Redis commands",
            f"1 poller ({rates[1][1]:.0f} answers/s): {rates[1][0]:.1f} ROLE/PING/AUTH calls/s on the "
            f"master; 100 pollers ({rates[100][1]:.0f} answers/s): {rates[100][0]:.1f} calls/s")


def _sentinel_subscriptions(agent):
    """dbcheck_sentinel_subscriptions_total of the cluster "cache" from the agent's /metrics."""
    for line in http_get(agent.http_port, "/metrics")[1].splitlines():
        if line.startswith('dbcheck_sentinel_subscriptions_total{cluster="cache"}'):
            return int(float(line.split()[-1]))
    return 0


def test_reloads_while_polled_keep_the_verdict_and_the_subscriptions(redis_cluster, redis_agents):
    """SIGHUP five times while pollers ask both ports: each reload stops the probers and the
    Sentinel watchers (subscribed) and starts new ones; the answers never waver and every
    Sentinel is subscribed again. ./scripts/test also runs this under ThreadSanitizer."""
    master = redis_cluster.wait_stable()
    a = next(x for x in redis_agents if x.name == f"agent-{master.name}")
    sentinels = len(redis_cluster.sentinels())
    wait_until(lambda: _sentinel_subscriptions(a) >= sentinels, 10, "every Sentinel subscribed")
    stop, replies, errors = threading.Event(), [], []

    def poll(ask):
        while not stop.is_set():
            try:
                replies.append(ask())
            except OSError as e:
                errors.append(repr(e))
            stop.wait(0.01)

    asks = [lambda: agent_ask(a.agent_port, b"redis_write\n"),
            lambda: http_get(a.http_port, "/health")[0],
            lambda: http_get(a.http_port, "/metrics")[0]]
    threads = [threading.Thread(target=poll, args=(ask,), daemon=True) for ask in asks * 2]
    for t in threads:
        t.start()
    try:
        for _ in range(5):
            a.reconfigure(master.addr, timeout=15)
            time.sleep(0.3)
    finally:
        stop.set()
        for t in threads:
            t.join(5)
    assert a.health()["agent"]["reloads"] == 5
    wait_until(lambda: _sentinel_subscriptions(a) >= sentinels, 10, "every Sentinel subscribed again")
    assert errors == []
    assert {r for r in replies if isinstance(r, str) and not r.startswith("up")} == set()
    assert {r for r in replies if isinstance(r, int)} == {200}


class _ServiceManager:
    """What systemd's side of Type=notify and WatchdogSec= does with an agent's notifications
    (sd_notify(3)): a datagram socket in the abstract namespace with SO_PASSCRED, so each
    message arrives with its sender's PID, as systemd reads it to attribute the message."""

    def __init__(self):
        self.name = f"dbcheck-test-notify-{os.getpid()}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind("\0" + self.name)
        self.received = []  # (monotonic time, sender pid, text)

    def collect(self):
        """Every message that has arrived, and any that arrive within the next 0.2 s. Bounded by
        that deadline, not by a quiet gap: the agent pings every tick (0.2 s) while it runs, so a
        gap may never come."""
        creds_len = socket.CMSG_SPACE(struct.calcsize("3i"))
        deadline = time.monotonic() + 0.2
        while True:
            left = deadline - time.monotonic()
            self.sock.settimeout(max(left, 0.001))
            try:
                data, anc, _, _ = self.sock.recvmsg(4096, creds_len)
            except socket.timeout:
                return self.received
            pid = next((struct.unpack("3i", d)[0] for level, kind, d in anc
                        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS), None)
            self.received.append((time.monotonic(), pid, data.decode()))

    def texts(self):
        return [text for _, _, text in self.collect()]


def test_agent_tells_the_service_manager_ready_reload_watchdog_and_stop(redis_cluster, workdir, agent_bin):
    """The agent speaks the notification protocol itself (no libsystemd): READY=1 once it
    listens, RELOADING=1 then READY=1 around a SIGHUP, WATCHDOG=1 while its probers deliver,
    STOPPING=1 on SIGTERM; each datagram from the agent's own PID. A WATCHDOG_PID naming
    another process turns the pings off (that watchdog is not the agent's)."""
    redis_cluster.wait_stable()
    node = redis_cluster.nodes()[0]
    manager = _ServiceManager()
    writer = functools.partial(write_redis_config, cluster=redis_cluster, owner=None)
    agent = AgentProcess(workdir, "agent-notify", agent_bin, writer, "cache", node.addr, interval="1s",
                         shutdown_grace="1s")
    try:
        agent.start(env={"NOTIFY_SOCKET": "@" + manager.name, "WATCHDOG_USEC": "2000000"})
        wait_until(lambda: "READY=1" in manager.texts(), 10, "READY=1")
        wait_until(lambda: manager.texts().count("WATCHDOG=1") >= 3, 10, "three WATCHDOG=1")
        agent.daemon.signal_stop(sig=signal.SIGHUP)
        wait_until(lambda: "RELOADING=1" in manager.texts(), 10, "RELOADING=1")
        wait_until(lambda: manager.texts().count("READY=1") >= 2, 10, "READY=1 after the reload")
        agent.daemon.signal_stop()
        wait_until(lambda: "STOPPING=1" in manager.texts(), 10, "STOPPING=1")
        agent.stop()  # raises on a sanitizer report
        assert agent.daemon.popen.returncode == 0, agent.log_text()[-2000:]
        got = manager.collect()
        order = [t for _, _, t in got if t != "WATCHDOG=1"]
        assert order == ["READY=1", "RELOADING=1", "READY=1", "STOPPING=1"], order
        assert {pid for _, pid, _ in got} == {agent.pid}, got
        # Pinged about every tick (0.2 s) while the probers deliver: always within the 2 s the
        # manager was told to wait (it would restart the agent otherwise).
        pings = [at for at, _, t in got if t == "WATCHDOG=1"]
        assert max(b - a for a, b in zip(pings, pings[1:])) < 2.0, pings
        # WATCHDOG_PID for another process: the watchdog is not ours, no pings.
        other = AgentProcess(workdir, "agent-notify-2", agent_bin, writer, "cache", node.addr, interval="1s",
                             shutdown_grace="1s")
        other.start(env={"NOTIFY_SOCKET": "@" + manager.name, "WATCHDOG_USEC": "2000000",
                         "WATCHDOG_PID": "1"})
        try:
            wait_until(lambda: [t for _, pid, t in manager.collect() if pid == other.pid] == ["READY=1"], 10,
                       "READY=1 from the second agent")
            time.sleep(1.0)  # five ticks: no ping may come
            assert [t for _, pid, t in manager.collect() if pid == other.pid] == ["READY=1"]
        finally:
            other.stop()
    finally:
        if agent.daemon is not None:
            agent.stop()
        manager.sock.close()
