"""dbcheck-agent on every PostgreSQL node, behind a real HAProxy 2.6 loading
haproxy-examples/postgres-patroni-agent.cfg (agent-check + httpchk to the agent)."""

import time

import pytest

from fixtures.agent import agent_ask, http_get, render_agent_example, start_pg_agents
from fixtures.procs import wait_until
from fixtures.sampler import Sampler


@pytest.fixture
def pg_agents(workdir, pg_cluster, agent_bin):
    """One running agent per Patroni member (interval 1s, fall 2, rise 3, lag_window 5s)."""
    pg_cluster.wait_healthy()
    agents = start_pg_agents(workdir, pg_cluster, agent_bin, interval="1s",
                             drain_file=str(workdir / "drain"), shutdown_grace="2s", ready_window="3s")
    yield agents
    for a in agents:
        a.stop()


def agent_for(agents, member):
    return next(a for a in agents if a.name == f"agent-{member.name}")


def test_agent_answers_from_its_cache(pg_cluster, pg_agents):
    leader = pg_cluster.leader()
    for m in pg_cluster.members():
        a = agent_for(pg_agents, m)
        wait_until(lambda: a.ask("pg_write").startswith("up" if m == leader else "down"), 10,
                   f"{m.name}'s agent settles on its writer verdict")
        assert a.ask("pg_read").startswith("down" if m == leader else "up"), a.ask("pg_read")
        assert a.ask("nope") == "down #unknown backend nope\n"
        # No agent-send line: the default backend (none configured here) after 100 ms.
        t0 = time.monotonic()
        assert agent_ask(a.agent_port).startswith("down #unknown backend")
        assert time.monotonic() - t0 < 0.5
        status, body = http_get(a.http_port, "/backend/pg_write")
        assert status == (200 if m == leader else 503), body
        assert http_get(a.http_port, "/live") == (200, "alive\n")
        status, metrics = http_get(a.http_port, "/metrics")
        assert status == 200 and 'dbcheck_backend_up{backend="pg_write"' in metrics


def test_switchover_through_haproxy_with_agents(pg_cluster, pg_agents, haproxy_factory, workdir, figures):
    old = pg_cluster.wait_healthy()
    cfg, _ = render_agent_example(pg_cluster, pg_agents, workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(cfg)
    hap.wait_until_checked("pg_write")
    wait_until(lambda: hap.servers_up("pg_write") == [old.name], 15, f"{old.name} alone UP")
    wait_until(lambda: len(hap.servers_up("pg_read")) == 2, 15, "two readers UP")
    new = pg_cluster.replicas()[0]
    with Sampler(hap, "pg_write") as s:
        time.sleep(1)
        t0 = time.monotonic()
        pg_cluster.switchover(new.name, leader=old.name)
        wait_until(lambda: hap.servers_up("pg_write") == [new.name], 60, f"{new.name} alone UP")
        t_routed = time.monotonic() - t0
        time.sleep(2)
    during = [up for t, up in s.samples if t >= t0]
    double = [up for up in during if len(up) > 1]
    no_writer = [t for t, up in s.samples if t >= t0 and not up]
    assert double == [], s.transitions()
    assert during[-1] == (new.name,)
    figures("agent: PostgreSQL switchover through HAProxy",
            f"writes routed to the new leader {t_routed:.1f}s after the request; no writer UP for "
            f"{(no_writer[-1] - no_writer[0] + 0.1) if no_writer else 0:.1f}s; two writers UP in "
            f"{len(double)} of {len(during)} samples")
    pg_cluster.wait_healthy()
    wait_until(lambda: len(hap.servers_up("pg_read")) == 2, 60, "both replicas back in pg_read")


def test_killed_agent_takes_its_writer_down(pg_cluster, pg_agents, haproxy_factory, workdir):
    """HAProxy keeps an agent's last word; the httpchk to the same agent is the backstop."""
    leader = pg_cluster.wait_healthy()
    cfg, _ = render_agent_example(pg_cluster, pg_agents, workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(cfg)
    wait_until(lambda: hap.servers_up("pg_write") == [leader.name], 15, f"{leader.name} UP")
    a = agent_for(pg_agents, leader)
    a.daemon.stop(timeout=1, sig=9)
    t0 = time.monotonic()
    wait_until(lambda: hap.servers_up("pg_write") == [], 10, "no writer once its agent is dead")
    assert time.monotonic() - t0 < 5
