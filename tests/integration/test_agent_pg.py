"""dbcheck-agent on every PostgreSQL node, behind a real HAProxy 2.6 loading
haproxy-examples/postgres-patroni-agent.cfg (agent-check + httpchk to the agent)."""

import time

import pytest

from fixtures.agent import agent_ask, http_get, render_agent_example, start_pg_agents
from fixtures.faults import connections_exhausted, frozen
from fixtures.patroni import APP_DB
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


def test_drain_file_sigterm_grace_and_operator_drain(pg_cluster, pg_agents, haproxy_factory, workdir, figures):
    leader = pg_cluster.wait_healthy()
    replica = pg_cluster.replicas()[0]
    a = agent_for(pg_agents, replica)
    cfg, _ = render_agent_example(pg_cluster, pg_agents, workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(cfg)
    wait_until(lambda: len(hap.servers_up("pg_read")) == 2, 15, "two readers UP")

    def status(backend, name):
        return next(r["status"] for r in hap.servers(backend) if r["svname"] == name)

    # The drain file: every backend of that agent answers drain; HAProxy drains the server.
    drain = workdir / "drain"
    drain.write_text("maintenance\n")
    # The agent re-reads the drain file every 200 ms (never on the answering path).
    wait_until(lambda: a.ask("pg_read").startswith("drain up #drain file"), 2, "the agent drains")
    wait_until(lambda: status("pg_read", replica.name).startswith("DRAIN"), 5, f"{replica.name} DRAIN in HAProxy")
    drain.unlink()
    wait_until(lambda: a.ask("pg_read").startswith("ready up"), 2, "the agent undoes its own drain")
    wait_until(lambda: status("pg_read", replica.name) == "UP", 5, f"{replica.name} back UP")
    # After the ready window the agent stops sending ready: an operator's drain survives.
    wait_until(lambda: not a.ask("pg_read").startswith("ready"), 10, "ready window over")
    hap.command(f"set server pg_read/{replica.name} state drain")
    time.sleep(2)  # four agent-inter periods: the agent polls, the operator's drain must hold
    assert status("pg_read", replica.name).startswith("DRAIN"), "the agent cancelled an operator's drain"
    hap.command(f"set server pg_read/{replica.name} state ready")
    wait_until(lambda: status("pg_read", replica.name) == "UP", 5, "operator's ready")

    # Restarted while its drain is in force: the new process undoes the old one's drain.
    drain.write_text("maintenance\n")
    wait_until(lambda: status("pg_read", replica.name).startswith("DRAIN"), 5, "drained again")
    a.stop()
    drain.unlink()
    a.start()
    assert a.ask("pg_read").startswith("ready up"), "a restarted agent must undo its own drain"
    wait_until(lambda: status("pg_read", replica.name) == "UP", 5, "UP after the restart")

    # SIGTERM: drain for shutdown_grace (2s here), then exit.
    a.daemon.signal_stop()
    t0 = time.monotonic()
    wait_until(lambda: a.ask("pg_read").startswith("drain up #dbcheck-agent is shutting down"), 1,
               "drain while shutting down")
    a.daemon.popen.wait(10)
    figures("agent SIGTERM", f"answered drain, exited {time.monotonic() - t0:.1f}s after SIGTERM "
            f"(shutdown_grace 2s)")
    assert 1.5 <= time.monotonic() - t0 < 5


def test_sighup_with_a_broken_config_keeps_the_old_one(pg_cluster, pg_agents):
    a = pg_agents[0]
    good = a.config.read_text()
    a.config.write_text(good + "\n[agent]\nthis is not toml\n")
    a.daemon.signal_stop(sig=1)
    wait_until(lambda: "reload failed" in a.log_text(), 5, "the reload failure logged")
    assert a.health()["agent"]["reload_failures"] == 1
    assert a.ask("pg_write")[:2] in ("up", "do")  # still answering from the old config
    a.config.write_text(good)
    a.daemon.signal_stop(sig=1)
    wait_until(lambda: a.health()["agent"]["reloads"] == 1, 5, "a good reload")


def test_saturated_leader_stays_up_with_reduced_weight(pg_cluster, pg_agents):
    leader = pg_cluster.wait_healthy()
    a = agent_for(pg_agents, leader)
    wait_until(lambda: a.ask("pg_write") == "up 100%\n", 10, "the leader up")
    with connections_exhausted(pg_cluster, leader):
        wait_until(lambda: a.ask("pg_write").startswith("up 50% #saturated"), 5, "saturation seen")
        answers = [a.ask("pg_write") for _ in range(10)]
        time.sleep(2)
        answers.append(a.ask("pg_write"))
    assert all(x.startswith("up 50%") for x in answers), answers


def test_what_only_new_sessions_meet_reaches_the_agent(pg_cluster, pg_agents, figures):
    """The agent's kept session does not see a database set read-only (ALTER DATABASE ... SET
    applies to new sessions) nor a wedged postmaster (existing backends keep answering): kept
    sessions are renewed every 5 s (ConnectionCache::k_max_age), so both reach the verdict
    within that plus `fall` rounds, and the agent comes back once they are gone."""
    leader = pg_cluster.wait_healthy()
    a = agent_for(pg_agents, leader)
    wait_until(lambda: a.ask("pg_write") == "up 100%\n", 10, "the leader up")

    def alter(action):
        with pg_cluster.superuser_conn(leader, db="postgres") as conn, conn.cursor() as cur:
            cur.execute(f"ALTER DATABASE {APP_DB} {action}")

    seen = {}
    alter("SET default_transaction_read_only = on")
    try:
        t0 = time.monotonic()
        reply = wait_until(lambda: (r := a.ask("pg_write")).startswith("down") and r, 10, "read-only seen")
        seen["read-only"] = time.monotonic() - t0
    finally:
        alter("RESET default_transaction_read_only")
    assert "read-only" in reply, reply
    wait_until(lambda: a.ask("pg_write") == "up 100%\n", 15, "up again once writable")
    with frozen([pg_cluster.postmaster_pid(leader)]):
        t0 = time.monotonic()
        reply = wait_until(lambda: (r := a.ask("pg_write")).startswith("down") and r, 10, "wedged postmaster seen")
        seen["wedged postmaster"] = time.monotonic() - t0
    assert "timeout" in reply, reply
    wait_until(lambda: a.ask("pg_write") == "up 100%\n", 15, "up again once the postmaster runs")
    figures("agent: faults only new sessions meet", ", ".join(f"{k} down after {v:.1f}s" for k, v in seen.items())
            + " (kept sessions renewed every 5 s, interval 1 s, fall 2)")


def test_lag_burst_shorter_than_window_stays_longer_leaves(pg_cluster, pg_agents, heartbeat, figures):
    replica = pg_cluster.replicas()[0]
    a = agent_for(pg_agents, replica)
    wait_until(lambda: a.ask("pg_read") == "up 100%\n", 10, "the replica up")
    pg_cluster.pause()
    su = pg_cluster.superuser_conn(replica)
    try:
        def pause_for(seconds):
            with su.cursor() as cur:
                cur.execute("SELECT pg_wal_replay_pause()")
            t0 = time.monotonic()
            seen = []
            while time.monotonic() - t0 < seconds:
                seen.append((time.monotonic() - t0, a.ask("pg_read")))
                time.sleep(0.25)
            with su.cursor() as cur:
                cur.execute("SELECT pg_wal_replay_resume()")
            return seen
        short = pause_for(4.0)  # max_lag 1s: over it for ~3s, window 5s
        assert all(r.startswith("up") for _, r in short), short
        assert any(r.startswith("up 50% #lagging") for _, r in short), short
        wait_until(lambda: a.ask("pg_read") == "up 100%\n", 10, "clean again")
        long = pause_for(8.0)
        left = next((t for t, r in long if r.startswith("down")), None)
        assert left is not None and left >= 5.0, long
        t_resumed = time.monotonic()
        wait_until(lambda: a.ask("pg_read").startswith("up"), 15, "rejoins after rise rounds")
        rejoin = time.monotonic() - t_resumed
        assert rejoin >= 1.5, f"rejoined after {rejoin:.1f}s: rise 3 at 1s needs about 2-3s"
    finally:
        with su.cursor() as cur:
            cur.execute("SELECT pg_wal_replay_resume()")
        su.close()
        pg_cluster.resume()
    figures("agent lag window", f"4s pause (lag > max_lag ~3s): stayed in at 50% weight; 8s pause: left "
            f"after {left:.1f}s (lag_window 5s); rejoined {rejoin:.1f}s after replay resumed (rise 3)")


def _poll_loop(port, backend, stop, latencies, errors):
    """One poller: ask, record the latency, pause 10 ms, until `stop`."""
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            agent_ask(port, f"{backend}\n".encode(), timeout=2)
            latencies.append(time.monotonic() - t0)
        except OSError as e:
            errors.append(str(e))
        stop.wait(0.01)


def _rounds(agent):
    """Checks the agent ran so far (all its backends), from /health."""
    return sum(b["rounds"] for b in agent.health()["backends"].values())


def _commits(pg_cluster, member):
    """Statements the health-check role has run on `member` so far (pg_stat_statements counts
    each as it finishes, unlike pg_stat_database, which a kept connection flushes lazily)."""
    with pg_cluster.superuser_conn(member) as conn, conn.cursor() as cur:
        cur.execute("SELECT coalesce(sum(s.calls), 0) FROM pg_stat_statements s "
                    "JOIN pg_roles r ON r.oid = s.userid WHERE r.rolname = 'healthcheck'")
        return int(cur.fetchone()[0])


def test_pollers_do_not_multiply_database_queries(pg_cluster, pg_agents, figures):
    import threading
    leader = pg_cluster.wait_healthy()
    a = agent_for(pg_agents, leader)
    rates, answered, round_rates = {}, {}, {}
    for pollers in (1, 100):
        stop, latencies, errors = threading.Event(), [], []
        threads = [threading.Thread(target=_poll_loop, args=(a.agent_port, "pg_write", stop, latencies, errors),
                                    daemon=True) for _ in range(pollers)]
        for t in threads:
            t.start()
        time.sleep(1)
        c0, r0, t0 = _commits(pg_cluster, leader), _rounds(a), time.monotonic()
        time.sleep(5)
        c1, r1, t1 = _commits(pg_cluster, leader), _rounds(a), time.monotonic()
        round_rates[pollers] = (r1 - r0) / (t1 - t0)
        stop.set()
        for t in threads:
            t.join(5)
        assert not errors, errors[:5]
        rates[pollers] = (c1 - c0) / (t1 - t0)
        answered[pollers] = len(latencies) / 6
    assert answered[100] > 20 * answered[1], answered
    # The probing does not follow the pollers: about one round per backend per second.
    assert all(1.5 <= r <= 2.5 for r in round_rates.values()), round_rates
    assert rates[100] <= rates[1] * 1.5 + 1, rates
    figures("agent pollers vs database queries",
            f"1 poller ({answered[1]:.0f} answers/s): {rates[1]:.1f} check statements/s, "
            f"{round_rates[1]:.1f} check rounds/s; 100 pollers ({answered[100]:.0f} answers/s): "
            f"{rates[100]:.1f} check statements/s, {round_rates[100]:.1f} check rounds/s")


def test_garbage_and_idle_connections_do_not_delay_real_pollers(pg_cluster, pg_agents, figures):
    import os
    import resource
    import socket
    import threading
    leader = pg_cluster.wait_healthy()
    a = agent_for(pg_agents, leader)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    # Random bytes and an oversized line: answered (down), never a crash.
    assert a.ask("pg_write").startswith("up")
    with socket.create_connection(("127.0.0.1", a.agent_port), timeout=2) as s:
        s.sendall(os.urandom(300) + b"\n")
        assert s.recv(4096).startswith(b"down #")
    with socket.create_connection(("127.0.0.1", a.agent_port), timeout=2) as s:
        try:
            s.sendall(b"a" * (1024 * 1024))
        except OSError:
            pass  # the agent answered and closed after 512 bytes
        assert s.recv(4096) == b"down #request line too long\n"
    # A slowloris client and 10,000 idle connections, while a real poller keeps asking.
    idle, stop = [], threading.Event()

    def slowloris():
        try:
            with socket.create_connection(("127.0.0.1", a.agent_port), timeout=5) as s:
                while not stop.is_set():
                    s.sendall(b"p")
                    stop.wait(0.05)
        except OSError:
            pass  # the agent cut it off after its read window

    loris = [threading.Thread(target=slowloris, daemon=True) for _ in range(20)]
    for t in loris:
        t.start()
    latencies = []
    try:
        for _ in range(10000):
            try:
                s = socket.socket()
                s.setblocking(False)
                s.connect_ex(("127.0.0.1", a.agent_port))
                idle.append(s)
            except OSError:
                break
            if len(idle) % 500 == 0:
                t0 = time.monotonic()
                reply = a.ask("pg_write")
                latencies.append(time.monotonic() - t0)
                assert reply.startswith("up"), reply
    finally:
        stop.set()
        for s in idle:
            s.close()
    assert len(idle) == 10000
    assert max(latencies) < 0.5, latencies
    assert http_get(a.http_port, "/live")[0] == 200
    assert a.daemon.alive()
    figures("agent under garbage", f"10,000 idle connections + 20 slowloris clients: real poller answered in "
            f"{min(latencies) * 1000:.1f}-{max(latencies) * 1000:.1f} ms; random bytes and a 1 MB line: "
            f"answered down, no crash")
