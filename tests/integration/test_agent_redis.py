"""dbcheck-agent on every Redis data node, behind a real HAProxy 2.6 loading
haproxy-examples/redis-sentinel-agent.cfg; Sentinel events drive re-probes."""

import time

import pytest

from fixtures.agent import render_redis_agent_example, start_redis_agents
from fixtures.procs import wait_until
from fixtures.sampler import Sampler


@pytest.fixture
def redis_agents(workdir, redis_cluster, agent_bin):
    redis_cluster.wait_stable()
    agents = start_redis_agents(workdir, redis_cluster, agent_bin, interval="1s")
    yield agents
    for a in agents:  # all at once: each drains for shutdown_grace before it exits
        a.daemon.signal_stop()
    for a in agents:
        a.stop()


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
    import threading
    from fixtures.agent import agent_ask
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
