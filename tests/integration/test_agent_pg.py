"""dbcheck-agent on every PostgreSQL node, behind a real HAProxy 2.6 loading
haproxy-examples/postgres-patroni-agent.cfg (agent-check + httpchk to the agent)."""

import re
import statistics
import time

import pytest

from lab.agent import agent_ask, http_get, render_agent_example, start_pg_agents, stop_agents
from lab.faults import connections_exhausted, frozen
from lab.patroni import APP_DB
from lab.procs import wait_until
from lab.sampler import Sampler


@pytest.fixture
def pg_agents(workdir, pg_cluster, agent_bin):
    """One running agent per Patroni member (interval 1s, fall 2, rise 3, lag_window 5s)."""
    pg_cluster.wait_healthy()
    agents = start_pg_agents(workdir, pg_cluster, agent_bin, interval="1s",
                             drain_file=str(workdir / "drain"), shutdown_grace="2s", ready_window="3s")
    yield agents
    stop_agents(agents)  # all at once; fails on a sanitizer report in an agent's log


def agent_for(agents, member):
    return next(a for a in agents if a.name == f"agent-{member.name}")


def test_agent_answers_from_its_cache(pg_cluster, pg_agents):
    leader = pg_cluster.leader()
    for m in pg_cluster.members():
        a = agent_for(pg_agents, m)
        wait_until(lambda: a.ask("pg_write").startswith("up" if m == leader else "down"), 30,
                   f"{m.name}'s agent settles on its writer verdict")
        assert a.ask("pg_read").startswith("down" if m == leader else "up"), a.ask("pg_read")
        assert a.ask("nope") == "down #unknown backend nope\n"
        # No agent-send line: the default backend (none configured here) after the agent's
        # 100 ms read window, not when the poller gives up (a loaded machine may add delay).
        t0 = time.monotonic()
        assert agent_ask(a.agent_port, timeout=10).startswith("down #unknown backend")
        waited = time.monotonic() - t0
        assert 0.1 <= waited < 2, f"answered {waited:.2f}s after connecting"
        status, body = http_get(a.http_port, "/backend/pg_write")
        assert status == (200 if m == leader else 503), body
        assert http_get(a.http_port, "/live") == (200, "alive\n")
        status, metrics = http_get(a.http_port, "/metrics")
        assert status == 200 and 'dbcheck_backend_up{backend="pg_write"' in metrics


def test_switchover_through_haproxy_with_agents(pg_cluster, pg_agents, haproxy_factory, workdir, figures):
    old = pg_cluster.wait_healthy()
    cfg, _ = render_agent_example(pg_cluster, pg_agents, workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(cfg)
    hap.wait_until_checked("pg_write", timeout=30)
    wait_until(lambda: hap.servers_up("pg_write") == [old.name], 30, f"{old.name} alone UP")
    wait_until(lambda: len(hap.servers_up("pg_read")) == 2, 30, "two readers UP")
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
    wait_until(lambda: hap.servers_up("pg_write") == [leader.name], 30, f"{leader.name} UP")
    a = agent_for(pg_agents, leader)
    a.daemon.stop(timeout=10, sig=9)
    # The httpchk (inter 1s, fall 1, timeout check 1s) fails within about 2 s; the bound is
    # loose for a loaded machine, and far below "never" (the agent's last word kept for good).
    wait_until(lambda: hap.servers_up("pg_write") == [], 20, "no writer once its agent is dead")


def test_drain_file_sigterm_grace_and_operator_drain(pg_cluster, pg_agents, haproxy_factory, workdir,
                                                     figures):
    pg_cluster.wait_healthy()
    replica = pg_cluster.replicas()[0]
    a = agent_for(pg_agents, replica)
    cfg, _ = render_agent_example(pg_cluster, pg_agents, workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(cfg)
    wait_until(lambda: len(hap.servers_up("pg_read")) == 2, 30, "two readers UP")

    def status(backend, name):
        return next(r["status"] for r in hap.servers(backend) if r["svname"] == name)

    # The drain file: every backend of that agent answers drain; HAProxy drains the server.
    drain = workdir / "drain"
    drain.write_text("maintenance\n")
    # The agent re-reads the drain file every 200 ms (never on the answering path).
    wait_until(lambda: a.ask("pg_read").startswith("drain up #drain file"), 10, "the agent drains")
    wait_until(lambda: status("pg_read", replica.name).startswith("DRAIN"), 15,
               f"{replica.name} DRAIN in HAProxy")
    drain.unlink()
    wait_until(lambda: a.ask("pg_read").startswith("ready up"), 10, "the agent undoes its own drain")
    wait_until(lambda: status("pg_read", replica.name) == "UP", 15, f"{replica.name} back UP")
    # After the ready window the agent stops sending ready: an operator's drain survives.
    wait_until(lambda: not a.ask("pg_read").startswith("ready"), 30, "ready window over")
    hap.command(f"set server pg_read/{replica.name} state drain")
    time.sleep(2)  # four agent-inter periods: the agent polls, the operator's drain must hold
    assert status("pg_read", replica.name).startswith("DRAIN"), "the agent cancelled an operator's drain"
    hap.command(f"set server pg_read/{replica.name} state ready")
    wait_until(lambda: status("pg_read", replica.name) == "UP", 15, "operator's ready")

    # Restarted while its drain is in force: the new process undoes the old one's drain.
    drain.write_text("maintenance\n")
    wait_until(lambda: status("pg_read", replica.name).startswith("DRAIN"), 15, "drained again")
    a.stop()
    drain.unlink()
    a.start(timeout=30)
    reply, uptime = a.ask("pg_read"), a.health()["agent"]["uptime_s"]
    # It says ready for ready_window (3s) after its start, by its own clock.
    assert reply.startswith("ready up") or uptime >= 3, \
        f"a restarted agent must undo its own drain: {reply!r} {uptime:.1f}s after its start"
    wait_until(lambda: status("pg_read", replica.name) == "UP", 15, "UP after the restart")

    # SIGTERM: drain for shutdown_grace (2s here), then exit. t0 before the signal: the grace
    # cannot have begun earlier, so the exit is at least 2 s after it whatever the scheduling.
    t0 = time.monotonic()
    a.daemon.signal_stop()
    wait_until(lambda: a.ask("pg_read").startswith("drain up #dbcheck-agent is shutting down"), 2,
               "drain while shutting down")
    a.daemon.popen.wait(20)
    exited = time.monotonic() - t0
    figures("agent SIGTERM", f"answered drain, exited {exited:.1f}s after SIGTERM (shutdown_grace 2s)")
    assert 2 <= exited < 2 + 10, f"exited {exited:.1f}s after SIGTERM, shutdown_grace 2s"


def test_sighup_with_a_broken_config_keeps_the_old_one(pg_cluster, pg_agents):
    a = pg_agents[0]
    good = a.config.read_text()
    a.config.write_text(good + "\n[agent]\nthis is not toml\n")
    a.daemon.signal_stop(sig=1)
    wait_until(lambda: "reload failed" in a.log_text(), 15, "the reload failure logged")
    assert a.health()["agent"]["reload_failures"] == 1
    assert a.ask("pg_write")[:2] in ("up", "do")  # still answering from the old config
    a.config.write_text(good)
    a.daemon.signal_stop(sig=1)
    wait_until(lambda: a.health()["agent"]["reloads"] == 1, 15, "a good reload")


def test_saturated_leader_stays_up_with_reduced_weight(pg_cluster, pg_agents):
    leader = pg_cluster.wait_healthy()
    a = agent_for(pg_agents, leader)
    wait_until(lambda: a.ask("pg_write") == "up 100%\n", 30, "the leader up")
    with connections_exhausted(pg_cluster, leader):
        wait_until(lambda: a.ask("pg_write").startswith("up 50% #saturated"), 30, "saturation seen")
        answers = [a.ask("pg_write") for _ in range(10)]
        # More saturated rounds than `fall`: saturation is no failure, it stays up throughout.
        rounds = a.health()["backends"]["pg_write"]["rounds"]
        wait_until(lambda: a.health()["backends"]["pg_write"]["rounds"] >= rounds + FALL + 1, 30,
                   f"{FALL + 1} more rounds while saturated")
        answers.append(a.ask("pg_write"))
    # Up in every answer. The weight may come back for a round: a slot another client frees
    # (another agent's connection to the leader, re-made) makes the node not full for that long.
    assert all(x.startswith("up ") for x in answers), answers
    assert sum(x.startswith("up 50% #saturated") for x in answers) > len(answers) // 2, answers


def test_what_only_new_sessions_meet_reaches_the_agent(pg_cluster, pg_agents, figures):
    """The agent's kept session does not see a database set read-only (ALTER DATABASE ... SET
    applies to new sessions) nor a wedged postmaster (existing backends keep answering): kept
    sessions are renewed every 5 s (ConnectionCache::k_max_age), so both reach the verdict
    within that plus `fall` rounds, and the agent comes back once they are gone."""
    leader = pg_cluster.wait_healthy()
    a = agent_for(pg_agents, leader)
    wait_until(lambda: a.ask("pg_write") == "up 100%\n", 30, "the leader up")

    def alter(action):
        with pg_cluster.superuser_conn(leader, db="postgres") as conn, conn.cursor() as cur:
            cur.execute(f"ALTER DATABASE {APP_DB} {action}")

    seen = {}
    alter("SET default_transaction_read_only = on")
    try:
        t0 = time.monotonic()
        reply = wait_until(lambda: (r := a.ask("pg_write")).startswith("down") and r, 30, "read-only seen")
        seen["read-only"] = time.monotonic() - t0
    finally:
        alter("RESET default_transaction_read_only")
    assert "read-only" in reply, reply
    wait_until(lambda: a.ask("pg_write") == "up 100%\n", 30, "up again once writable")
    with frozen([pg_cluster.postmaster_pid(leader)]):
        t0 = time.monotonic()
        reply = wait_until(lambda: (r := a.ask("pg_write")).startswith("down") and r, 30,
                           "wedged postmaster seen")
        seen["wedged postmaster"] = time.monotonic() - t0
    assert "PostgreSQL timed out" in reply, reply  # the failure class leads the reason
    wait_until(lambda: a.ask("pg_write") == "up 100%\n", 30, "up again once the postmaster runs")
    figures("agent: faults only new sessions meet",
            ", ".join(f"{k} down after {v:.1f}s" for k, v in seen.items())
            + " (kept sessions renewed every 5 s, interval 1 s, fall 2)")


# The agent's damping in these tests (its defaults): interval 1s, fall 2, rise 3, lag_window 5s.
FALL, RISE, LAG_WINDOW = 2, 3, 5.0


def lagging_for(reason):
    """Seconds the agent itself says a lag has lasted ("lagging for 2.004s ..."), or None."""
    m = re.search(r"lagging for ([0-9.]+)s", reason)
    return float(m.group(1)) if m else None


def logged_transitions(agent, backend):
    """The agent's own record of `backend`'s state changes, oldest first, from its log lines
    `msg=transition backend=... from=... to=... failure=... reason="..."`: [{field: value}]."""
    out = []
    for line in agent.log_text().splitlines():
        if " msg=transition " in line:
            fields = {k: v[1:-1].replace('\\"', '"') if v.startswith('"') else v
                      for k, v in re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', line)}
            if fields.get("backend") == backend:
                out.append(fields)
    return out


def test_lag_burst_shorter_than_window_stays_longer_leaves(pg_cluster, pg_agents, heartbeat, figures):
    """Judged by the agent's own clock (the lag durations it reports and logs), never by how long
    the test paused replay: a loaded machine may stretch any pause."""
    replica = pg_cluster.replicas()[0]
    a = agent_for(pg_agents, replica)
    wait_until(lambda: a.ask("pg_read") == "up 100%\n", 30, "the replica up")
    pg_cluster.pause()
    su = pg_cluster.superuser_conn(replica)
    replies = []

    def replay(action):
        with su.cursor() as cur:
            cur.execute(f"SELECT pg_wal_replay_{action}()")

    def watch(predicate, what):
        """Ask the agent (keeping every reply in `replies`) until predicate(reply); bounded."""
        def step():
            reply = a.ask("pg_read")
            replies.append(reply)
            return predicate(reply)
        return wait_until(step, 60, what)

    def downs_since(mark):
        return [t for t in logged_transitions(a, "pg_read")[mark:] if t["to"] == "down"]

    try:
        # A burst shorter than lag_window: replay paused until the agent says the lag has lasted
        # 1 s (at least `fall` failing rounds, which would take it down for any other failure),
        # then resumed. Should the machine stretch that pause to lag_window by the agent's own
        # clock, leaving is right and the attempt proves nothing: try again.
        for _ in range(3):
            mark, replies[:] = len(logged_transitions(a, "pg_read")), []
            replay("pause")
            try:
                watch(lambda r: (lagging_for(r) or 0) >= 1.0, "the agent reports a lag lasting 1 s")
            finally:
                replay("resume")
            watch(lambda r: r == "up 100%\n", "clean again")
            left = downs_since(mark)
            if not left:
                break
            assert all(t["failure"] == "lag" and lagging_for(t["reason"]) >= LAG_WINDOW for t in left), \
                f"left before lag_window by the agent's own clock: {left}"
        else:
            pytest.fail("the short burst outlasted lag_window three times in a row")
        short, short_lasted = list(replies), max(lagging_for(r) or 0 for r in replies)
        assert all(r.startswith("up") for r in short), short
        assert any(r.startswith("up 50% #lagging for") for r in short), short
        assert short_lasted < LAG_WINDOW, short

        # A lag longer than lag_window: replay stays paused until the agent takes the replica
        # out (bounded), and its log says it left because the lag had lasted lag_window.
        mark, replies[:] = len(logged_transitions(a, "pg_read")), []
        replay("pause")
        try:
            watch(lambda r: r.startswith("down"), "the replica leaves once the lag outlasts lag_window")
        finally:
            replay("resume")
        long = list(replies)
        left = wait_until(lambda: downs_since(mark), 10, "the agent logs its transition to down")[0]
        assert left["failure"] == "lag", left
        assert lagging_for(left["reason"]) >= LAG_WINDOW, left
        assert all(r.startswith("up") for r in long[:-1]), long
        assert any(r.startswith("up 50% #lagging for") for r in long), long
        # Back only after `rise` passing rounds: the round that brought it up was the third.
        watch(lambda r: r.startswith("up"), "rejoins after rise rounds")
        successes = a.health()["backends"]["pg_read"]["hysteresis"]["successes"]
        assert successes >= RISE, f"up again after {successes} passing rounds: {replies[-5:]}"
    finally:
        replay("resume")
        su.close()
        pg_cluster.resume()
    figures("agent lag window", f"a lag of {short_lasted:.1f}s (agent's clock): stayed in at 50% weight; "
            f"a longer one: left once it had lasted {lagging_for(left['reason']):.1f}s (lag_window "
            f"{LAG_WINDOW:g}s); rejoined after {RISE} passing rounds")


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
        threads = [threading.Thread(target=_poll_loop,
                                    args=(a.agent_port, "pg_write", stop, latencies, errors), daemon=True)
                   for _ in range(pollers)]
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
    # The premise: 100 pollers asked many times more often (how many more depends on the CPU
    # the machine leaves this test's threads).
    assert answered[100] > 5 * answered[1], answered
    # The probing does not follow the pollers: at most one round per backend per interval (1s),
    # plus one late round at each end of the window; a loaded machine may only make fewer.
    assert all(0.5 <= r <= 2 * (1 + 2 / 5) for r in round_rates.values()), round_rates
    assert rates[100] <= rates[1] * 1.5 + 1, rates
    figures("agent pollers vs database queries",
            f"1 poller ({answered[1]:.0f} answers/s): {rates[1]:.1f} check statements/s, "
            f"{round_rates[1]:.1f} check rounds/s; 100 pollers ({answered[100]:.0f} answers/s): "
            f"{rates[100]:.1f} check statements/s, {round_rates[100]:.1f} check rounds/s")


NEIGHBOUR = "127.0.0.2"  # inside the fixtures' default allow list, not the poller's address


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
    # A slowloris client and 10,000 idle connections from a neighbour's address (the agent
    # resets what one address opens beyond 1024), while a real poller keeps asking.
    idle, stop = [], threading.Event()

    def slowloris():
        try:
            with socket.create_connection(("127.0.0.1", a.agent_port), timeout=5,
                                          source_address=(NEIGHBOUR, 0)) as s:
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
                s.setsockopt(socket.SOL_IP, 24, 1)  # IP_BIND_ADDRESS_NO_PORT: ports by destination
                s.bind((NEIGHBOUR, 0))
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
    # Not delayed: typically a few ms; the median with slack, and every answer well before
    # the poller's own 2 s timeout (a loaded machine may hold one back now and then).
    assert statistics.median(latencies) < 0.25, latencies
    assert max(latencies) < 1.5, latencies
    assert http_get(a.http_port, "/live")[0] == 200
    assert a.daemon.alive()
    figures("agent under garbage", f"10,000 idle connections + 20 slowloris clients from a neighbour: "
            f"real poller answered in "
            f"{min(latencies) * 1000:.1f}-{max(latencies) * 1000:.1f} ms; random bytes and a 1 MB line: "
            f"answered down, no crash")
