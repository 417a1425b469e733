"""HAProxy 2.6 loading haproxy-examples/postgres-patroni.cfg with dbcheck as its external
check, in front of a real 3-member Patroni cluster: steady state and switchover."""

import time

from lab.haproxy import timestamped_log, render_example_for
from lab.procs import wait_until
from lab.sampler import Sampler

# rise 3 x inter 1s (+ check time) for the writer, rise 2 for readers, plus ample slack for a
# loaded machine (checks are processes: their start-up counts here).
ROUTING_TIMEOUT = 30


def start_haproxy(pg_cluster, dbcheck_setup, haproxy_factory, workdir):
    """HAProxy from the shipped example, adapted to the test's ports; waits until every
    server of both backends has a check result."""
    cfg, ports = render_example_for(pg_cluster, dbcheck_setup.wrapper, workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(cfg)
    hap.wait_until_checked("pg_write")
    hap.wait_until_checked("pg_read")
    return hap, ports


def test_steady_state_routes_writes_to_the_leader_and_reads_to_replicas(
        pg_cluster, dbcheck_setup, haproxy_factory, workdir, figures):
    leader = pg_cluster.wait_healthy()
    replicas = sorted(m.name for m in pg_cluster.replicas())
    hap, _ = start_haproxy(pg_cluster, dbcheck_setup, haproxy_factory, workdir)
    t0 = time.monotonic()
    wait_until(lambda: hap.servers_up("pg_write") == [leader.name], ROUTING_TIMEOUT,
               f"pg_write has exactly {leader.name} UP")
    wait_until(lambda: sorted(hap.servers_up("pg_read")) == replicas, ROUTING_TIMEOUT,
               f"pg_read has exactly {replicas} UP")
    # And it stays that way: sample for 3 s, never a second writer, never a missing one.
    with Sampler(hap, "pg_write") as s:
        time.sleep(3)
    assert s.samples, "the sampler took no samples"
    assert all(up == (leader.name,) for _, up in s.samples), s.transitions()
    assert sorted(hap.servers_up("pg_read")) == replicas
    # The check's own last status in HAProxy is a passing external check.
    rows = {r["svname"]: r for r in hap.servers("pg_write")}
    assert rows[leader.name]["check_status"] == "PROCOK", rows[leader.name]
    for name in replicas:
        assert rows[name]["check_status"] == "PROCERR", rows[name]
        assert rows[name]["check_code"] == "1", rows[name]
    figures("steady state", f"pg_write UP={[leader.name]} pg_read UP={replicas} "
            f"(routing settled {time.monotonic() - t0:.1f}s after the first checks)")


def test_switchover_moves_writes_without_two_writers(pg_cluster, dbcheck_setup, haproxy_factory, workdir,
                                                     figures):
    old = pg_cluster.wait_healthy()
    hap, _ = start_haproxy(pg_cluster, dbcheck_setup, haproxy_factory, workdir)
    wait_until(lambda: hap.servers_up("pg_write") == [old.name], ROUTING_TIMEOUT,
               f"{old.name} UP in pg_write")
    new = pg_cluster.replicas()[0]
    with Sampler(hap, "pg_write", interval=0.1) as s:
        time.sleep(1)
        t0 = time.monotonic()
        pg_cluster.switchover(new.name, leader=old.name)
        t_cmd = time.monotonic() - t0
        wait_until(lambda: hap.servers_up("pg_write") == [new.name], 60, f"{new.name} alone UP in pg_write")
        t_routed = time.monotonic() - t0
        time.sleep(2)  # keep sampling: the old leader must not come back
    during = [up for t, up in s.samples if t >= t0]
    double_up = [up for up in during if len(up) > 1]
    no_writer = s.first(lambda up: len(up) == 0, since=t0)
    first_new = s.first(lambda up: up == (new.name,), since=t0)
    gap = first_new[0] - no_writer[0] if no_writer and first_new else 0.0
    assert len(s.samples) > 20 and not s.errors, (len(s.samples), s.errors)
    assert double_up == [], f"two servers UP in pg_write: {s.transitions()}"
    assert during[-1] == (new.name,), s.transitions()
    # Patroni's own handover takes ~2-4 s here; HAProxy's rise 3 x inter 1s comes on top. A loose
    # bound (patronictl's start-up and every check's are in it); bench/failover measures it.
    assert t_routed <= 30, f"writes took {t_routed:.1f}s to reach the new leader"
    figures("switchover", f"patronictl returned after {t_cmd:.1f}s; HAProxy routes writes to the new leader "
            f"{t_routed:.1f}s after the request; no writer UP for {gap:.1f}s; samples with two writers UP: "
            f"{len(double_up)} of {len(during)} (100 ms sampling)")
    # Leave the shared cluster healthy, with both replicas back in pg_read.
    pg_cluster.wait_healthy()
    wait_until(lambda: len(hap.servers_up("pg_read")) == 2, 60, "both replicas back in pg_read")


def test_reload_with_saved_server_state_never_starts_replicas_up(
        pg_cluster, dbcheck_setup, haproxy_factory, workdir, figures):
    """The examples' reload advice works: a new HAProxy that loads the state saved just before
    (server-state-file) starts with only the leader UP in pg_write; without it, every server
    starts UP until its checks fail (`balance first` could write to a replica meanwhile)."""
    leader = pg_cluster.wait_healthy()
    sock = workdir / "haproxy" / "admin.sock"  # shared by the three HAProxy runs below
    sock.parent.mkdir(mode=0o755, exist_ok=True)
    cfg, _ = render_example_for(pg_cluster, dbcheck_setup.wrapper, sock)
    state_file = sock.parent / "server-state"
    assert f"server-state-file {state_file}\n" in cfg and "load-server-state-from-file global" in cfg
    old = haproxy_factory(cfg, name="haproxy-old")
    wait_until(lambda: old.servers_up("pg_write") == [leader.name], ROUTING_TIMEOUT,
               f"{leader.name} alone UP")
    state_file.write_text(old.command("show servers state"))
    old.stop()
    new = haproxy_factory(cfg, name="haproxy-new")
    first = new.servers_up("pg_write")  # before any check of the new process could finish
    new.stop()
    state_file.unlink()
    # The failure this prevents: without the state, HAProxy starts every server UP. Its first
    # checks may finish before a `show stat` does, so read it from HAProxy's own log (a
    # replica that goes DOWN was UP before) rather than racing it.
    bare = haproxy_factory(timestamped_log(cfg), name="haproxy-bare")
    replicas = {m.name for m in pg_cluster.members()} - {leader.name}
    went_down = lambda: {srv for _, srv, state in bare.state_events("pg_write")  # noqa: E731
                         if state == "DOWN"}
    wait_until(lambda: replicas <= went_down(), ROUTING_TIMEOUT,
               "the bare HAProxy taking the replicas down")
    first_bare = sorted(replicas | {leader.name})
    bare.stop()
    assert first == [leader.name], first
    figures("reload", f"with the saved state pg_write starts with {first} UP; without it {first_bare}")
