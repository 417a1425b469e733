"""`dbcheck status`: one screen for the whole cluster, from a real Patroni cluster and the
shipped HAProxy example's servers; from a real Redis Sentinel cluster (the master and the
replicas the Sentinels list, or why they are missing); and `--watch` in a real terminal (tmux,
80 columns) while Patroni switches the leader over, ending when its terminal goes away."""

import json
import os
import pty
import signal
import subprocess
import time

import pytest

from lab.haproxy import render_example_for, render_redis_example_for
from lab.procs import rerun_until, wait_until
from lab.redis import HC_USER


def _files(pg_cluster, dbcheck_setup, workdir):
    """The example HAProxy configuration for the cluster, where user haproxy can read it."""
    cfg, _ = render_example_for(pg_cluster, dbcheck_setup.wrapper, workdir / "haproxy" / "admin.sock")
    path = workdir / "haproxy.cfg"
    path.write_text(cfg)
    return path


def _status(dbcheck_bin, config, haproxy_cfg, *args):
    """`dbcheck status` as user haproxy (who owns the password file), like the checks."""
    return subprocess.run(["runuser", "-u", "haproxy", "--", str(dbcheck_bin), "--config", str(config),
                           "status", "--haproxy-config", str(haproxy_cfg), *args],
                          capture_output=True, text=True, timeout=30)


def test_status_shows_every_node_the_manager_and_each_backend(pg_cluster, dbcheck_setup, dbcheck_bin,
                                                              workdir):
    leader = pg_cluster.wait_healthy()
    replicas = sorted(m.name for m in pg_cluster.replicas())
    haproxy_cfg = _files(pg_cluster, dbcheck_setup, workdir)

    def replicas_read(r):
        if r.returncode != 0:
            return False
        nodes = {n["name"]: n for n in json.loads(r.stdout)["clusters"][0]["nodes"]}
        return all(nodes.get(name, {}).get("verdicts", {}).get("pg_read", {}).get("state") == "up"
                   for name in replicas)

    r = rerun_until(lambda: _status(dbcheck_bin, dbcheck_setup.config, haproxy_cfg, "--json"),
                    replicas_read, 30, "every replica UP in pg_read")
    (c,) = json.loads(r.stdout)["clusters"]
    assert (c["name"], c["engine"], c["backends"]) == ("pg", "postgres", ["pg_write", "pg_read"]), c
    assert c["manager"] == f"Patroni names {leader.name} leader", c["manager"]
    nodes = {n["name"]: n for n in c["nodes"]}
    # HAProxy's servers are the same nodes as Patroni's members: one row each.
    assert sorted(nodes) == sorted([leader.name, *replicas]), nodes
    assert nodes[leader.name]["manager"].startswith("leader "), nodes[leader.name]
    assert nodes[leader.name]["address"] == leader.pg_addr, nodes[leader.name]
    assert nodes[leader.name]["verdicts"]["pg_write"]["state"] == "up"
    assert nodes[leader.name]["verdicts"]["pg_read"] == {
        "state": "down", "failure": "role", "reason": nodes[leader.name]["verdicts"]["pg_read"]["reason"]}
    for name in replicas:
        v = nodes[name]["verdicts"]
        assert v["pg_write"]["state"] == "down" and v["pg_write"]["failure"] == "role", v
        assert v["pg_write"]["reason"], v
        assert v["pg_read"]["state"] == "up", v
    # What each says: Patroni's timeline and lag, the node's own answer, the lag in seconds.
    timeline = nodes[leader.name]["timeline"]
    assert timeline.isdigit(), nodes[leader.name]
    assert nodes[leader.name]["own"] == "primary, read-write", nodes[leader.name]
    assert nodes[leader.name]["lag_s"] is None, nodes[leader.name]
    for name in replicas:
        n = nodes[name]
        assert n["timeline"] == timeline and n["manager_lag"].isdigit(), n
        assert n["own"] == f"replica, streaming, timeline {timeline}", n
        assert isinstance(n["lag_s"], float) and 0 <= n["lag_s"] < 10, n
        assert n["lag_derivation"], n
    # The text form: a title, a header, a row per node, and why each DOWN is DOWN.
    r = _status(dbcheck_bin, dbcheck_setup.config, haproxy_cfg)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"pg (postgres): Patroni names {leader.name} leader", lines
    assert lines[1].split() == ["NODE", "MANAGER", "pg_write", "pg_read"], lines
    row = next(line for line in lines if line.startswith(f"{leader.name} "))
    assert row.split()[-3:] == ["UP", "DOWN", "role"], row
    assert "why DOWN:" in lines, lines
    assert any(line.startswith(f"  pg_read {leader.name}: ") for line in lines), lines
    assert ["NODE", "TL", "LAG(B)", "OWN", "ANSWER", "LAG(S)"] in [line.split() for line in lines], lines
    assert "lag in seconds, how it was bounded:" in lines, lines
    for name in replicas:
        assert any(line.startswith(f"  {name}: ") for line in lines), lines
    # An unknown cluster is a configuration error, named.
    r = _status(dbcheck_bin, dbcheck_setup.config, haproxy_cfg, "nope")
    assert r.returncode == 2 and "no [cluster.nope]" in r.stderr, r.stderr


def test_status_watch_in_a_terminal_during_a_switchover(pg_cluster, dbcheck_setup, dbcheck_bin, workdir,
                                                        figures):
    old = pg_cluster.wait_healthy()
    new = pg_cluster.replicas()[0]
    haproxy_cfg = _files(pg_cluster, dbcheck_setup, workdir)
    sock = f"dbcheck-status-{os.getpid()}"  # a tmux server of our own, killed at the end
    tmux = ["tmux", "-L", sock]
    cmd = (f"runuser -u haproxy -- {dbcheck_bin} --config {dbcheck_setup.config} status pg --watch "
           f"--haproxy-config {haproxy_cfg}")
    subprocess.run([*tmux, "new-session", "-d", "-x", "80", "-y", "30", cmd], check=True, timeout=10)
    screens = []
    started = []

    def screen():
        s = subprocess.run([*tmux, "capture-pane", "-p", "-t", "0"], capture_output=True, text=True,
                           timeout=10).stdout
        screens.append(s)
        return s

    def writer_row(s, name):
        return next((line for line in s.splitlines() if line.startswith(f"{name} ")), "")

    def writer_cell(s, name):
        """The pg_write cell of `name`'s row ("UP", "*UP", "DOWN", ...), by the header's column."""
        header = next((line for line in s.splitlines() if line.startswith("NODE ")), "")
        row = writer_row(s, name)
        col = header.find("pg_write")
        return row[col:].split()[0] if col >= 0 and len(row) > col and row[col:].split() else ""

    try:
        wait_until(lambda: writer_cell(screen(), old.name) == "UP", 30,
                   f"the watch showing {old.name} UP in pg_write")
        started = _pane_processes(tmux)
        t0 = time.monotonic()
        pg_cluster.switchover(new.name, leader=old.name)
        wait_until(lambda: f"Patroni names {new.name} leader" in screen()
                   and writer_cell(screens[-1], new.name).lstrip("*") == "UP", 60,
                   f"the watch showing {new.name} leader and UP in pg_write")
        seen = time.monotonic() - t0
        marked = [s for s in screens
                  if writer_cell(s, new.name) == "*UP" or writer_cell(s, old.name) == "*DOWN"]
        final = screens[-1]
    finally:
        subprocess.run([*tmux, "kill-server"], timeout=10)
        _assert_all_end(started)
    assert marked, "no redraw marked the change with '*'"
    too_wide = [line for s in screens for line in s.splitlines() if len(line) > 80]
    assert not too_wide, too_wide[:3]
    figures("status --watch", f"{len(screens)} screens captured; the new leader {new.name} shown UP "
            f"{seen:.1f}s after the switchover request; every line within 80 columns; a screen during "
            f"the switchover:\n{marked[0].rstrip()}\nthe last:\n{final.rstrip()}")
    pg_cluster.wait_healthy()


def test_status_of_a_redis_cluster_names_the_sentinels_master(redis_cluster, redis_dbcheck_setup,
                                                              dbcheck_bin, workdir):
    """Redis: the master a strict majority of the Sentinels names, and the example's servers
    (the data nodes) checked for both backends."""
    master = redis_cluster.master()
    replica = redis_cluster.replicas(master)[0]
    cfg, _ = render_redis_example_for(redis_cluster, redis_dbcheck_setup.wrapper,
                                      workdir / "haproxy" / "admin.sock")
    haproxy_cfg = workdir / "haproxy.cfg"
    haproxy_cfg.write_text(cfg)
    r = _status(dbcheck_bin, redis_dbcheck_setup.config, haproxy_cfg, "--json")
    assert r.returncode == 0, r.stderr
    (c,) = json.loads(r.stdout)["clusters"]
    assert c["engine"] == "redis" and c["backends"] == ["redis_write", "redis_read"], c
    assert c["manager"] == f"3 of 3 Sentinels name {master.addr} master", c["manager"]
    nodes = {n["address"]: n for n in c["nodes"]}
    assert sorted(nodes) == sorted([master.addr, replica.addr]), nodes
    assert nodes[master.addr]["manager"] == "master 3/3"
    assert nodes[master.addr]["verdicts"]["redis_write"]["state"] == "up", nodes[master.addr]
    assert nodes[replica.addr]["verdicts"]["redis_write"]["failure"] == "role", nodes[replica.addr]
    assert nodes[replica.addr]["verdicts"]["redis_read"]["state"] == "up", nodes[replica.addr]
    # Each node's own ROLE, and each Sentinel's answer with its flags and epoch.
    assert nodes[master.addr]["own"] == "master", nodes[master.addr]
    assert nodes[replica.addr]["own"] == f"replica of {master.addr}, link connected", nodes[replica.addr]
    assert nodes[replica.addr]["lag_s"] is not None, nodes[replica.addr]
    assert len(c["sentinels"]) == 3, c["sentinels"]
    for sent in c["sentinels"]:
        assert sent["names"] == master.addr and "master" in sent["flags"].split(","), sent
        assert sent["epoch"].isdigit(), sent


def _stat(pid):
    """(state, start time) of process `pid` from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return fields[0], fields[19]


def _process(pid):
    """(pid, start time) of a running process, to tell it from a later one given its PID."""
    return pid, _stat(pid)[1]


def _alive(proc):
    """True while `proc` runs: a zombie has ended (only its parent, maybe init, has yet to
    reap it)."""
    try:
        state, start = _stat(proc[0])
    except (FileNotFoundError, ProcessLookupError):
        return False
    return start == proc[1] and state != "Z"


def _descendants(pid):
    """`pid` and every process below it, each as _process() gives it."""
    out = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            out.append(_process(p))
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo.extend(int(c) for c in f.read().split())
        except FileNotFoundError:
            pass
    return out


def _pane_processes(tmux):
    """The processes of the tmux server's only pane: its command and all it started."""
    pid = subprocess.run([*tmux, "list-panes", "-F", "#{pane_pid}"], capture_output=True, text=True,
                         timeout=10, check=True).stdout.split()
    assert len(pid) == 1, pid
    return _descendants(int(pid[0]))


def _assert_all_end(procs, timeout=15):
    """Waits (bounded) for each of `procs` to end; any still running is killed by its PID, and
    the test fails naming it. Returns the seconds it took."""
    t0 = time.monotonic()
    try:
        wait_until(lambda: not any(_alive(p) for p in procs), timeout,
                   "every process the watch's pane started to end")
    finally:
        left = [p for p in procs if _alive(p)]
        for pid, _ in left:
            os.kill(pid, signal.SIGKILL)
    assert not left, f"still running after the terminal went away: {left}"
    return time.monotonic() - t0


def _redis_haproxy_cfg(redis_cluster, redis_dbcheck_setup, workdir):
    cfg, _ = render_redis_example_for(redis_cluster, redis_dbcheck_setup.wrapper,
                                      workdir / "haproxy" / "admin.sock")
    path = workdir / "haproxy.cfg"
    path.write_text(cfg)
    return path


def test_status_of_a_redis_cluster_lists_the_replicas_the_sentinels_know(redis_cluster, redis_dbcheck_setup,
                                                                         dbcheck_bin, workdir):
    """Without HAProxy's servers, the Sentinels alone name every node: the master, and the
    replica where reads go (SENTINEL REPLICAS), each checked for both backends."""
    master = redis_cluster.wait_stable()
    (replica,) = redis_cluster.replicas(master)
    no_haproxy = workdir / "no-haproxy.cfg"
    r = _status(dbcheck_bin, redis_dbcheck_setup.config, no_haproxy, "--json")
    assert r.returncode == 0, r.stderr
    (c,) = json.loads(r.stdout)["clusters"]
    nodes = {n["address"]: n for n in c["nodes"]}
    assert sorted(nodes) == sorted([master.addr, replica.addr]), c
    assert (nodes[master.addr]["name"], nodes[master.addr]["manager"]) == ("master", "master 3/3")
    assert (nodes[replica.addr]["name"], nodes[replica.addr]["manager"]) == ("replica", "replica 3/3")
    assert nodes[replica.addr]["verdicts"]["redis_read"]["state"] == "up", nodes[replica.addr]
    assert nodes[replica.addr]["verdicts"]["redis_write"]["failure"] == "role", nodes[replica.addr]
    assert nodes[master.addr]["verdicts"]["redis_write"]["state"] == "up", nodes[master.addr]
    assert [s["address"] for s in c["sentinels"]] == [s.addr for s in redis_cluster.sentinels()], c
    assert all(s["names"] == master.addr for s in c["sentinels"]), c["sentinels"]
    # Only HAProxy's file is missing, and the note says so; nothing about the replicas.
    assert c["notes"] == [f"{no_haproxy} not read: only the nodes the manager names are shown"], c
    # The text says the same: a row per node, the replica UP for reads.
    r = _status(dbcheck_bin, redis_dbcheck_setup.config, no_haproxy)
    assert r.returncode == 0, r.stderr
    rows = {line.split()[1]: line.split() for line in r.stdout.splitlines()
            if line.startswith(("master ", "replica "))}
    assert rows[master.addr][2:] == ["master", "3/3", "UP", "DOWN", "role"], rows
    assert rows[replica.addr][2:] == ["replica", "3/3", "DOWN", "role", "UP"], rows
    # With HAProxy's file, the replica goes by HAProxy's name, still one row.
    haproxy_cfg = _redis_haproxy_cfg(redis_cluster, redis_dbcheck_setup, workdir)
    r = _status(dbcheck_bin, redis_dbcheck_setup.config, haproxy_cfg, "--json")
    (c,) = json.loads(r.stdout)["clusters"]
    assert [(n["name"], n["manager"]) for n in c["nodes"]] == [("master", "master 3/3"),
                                                               (replica.name, "replica 3/3")], c
    assert c["notes"] == [], c


def test_status_says_when_the_sentinel_acl_refuses_replicas(redis_cluster, redis_dbcheck_setup, dbcheck_bin,
                                                            workdir):
    """A Sentinel ACL without +sentinel|replicas (the line shipped before it): the replicas
    cannot be listed, and the table says so and how to fix it, rather than leave them out."""
    master = redis_cluster.wait_stable()
    sentinels = redis_cluster.sentinels()
    note = ("replicas unknown: the Sentinel user may not run SENTINEL REPLICAS (NOPERM); "
            "add +sentinel|replicas to its ACL")
    try:
        for s in sentinels:
            assert redis_cluster.sentinel_admin(s, "ACL", "SETUSER", HC_USER, "-sentinel|replicas") == "OK"
        r = _status(dbcheck_bin, redis_dbcheck_setup.config, workdir / "no-haproxy.cfg", "--json")
        assert r.returncode == 0, r.stderr
        (c,) = json.loads(r.stdout)["clusters"]
        assert [n["address"] for n in c["nodes"]] == [master.addr], c
        assert note in c["notes"], c["notes"]
        r = _status(dbcheck_bin, redis_dbcheck_setup.config, workdir / "no-haproxy.cfg")
        assert r.returncode == 0, r.stderr
        assert f"note: {note}" in r.stdout.splitlines(), r.stdout
        # One Sentinel refusing: the others' list, the refuser named.
        for s in sentinels[1:]:
            assert redis_cluster.sentinel_admin(s, "ACL", "SETUSER", HC_USER, "+sentinel|replicas") == "OK"
        r = _status(dbcheck_bin, redis_dbcheck_setup.config, workdir / "no-haproxy.cfg", "--json")
        (c,) = json.loads(r.stdout)["clusters"]
        assert len(c["nodes"]) == 2, c
        partial = (f"replicas as 2 of 3 Sentinels list them: the Sentinel user may not run SENTINEL "
                   f"REPLICAS on {sentinels[0].addr} (NOPERM); add +sentinel|replicas to its ACL")
        assert partial in c["notes"], c["notes"]
    finally:
        for s in sentinels:
            redis_cluster.sentinel_admin(s, "ACL", "SETUSER", HC_USER, "+sentinel|replicas")


# How an operator runs it as HAProxy's user: runuser forks and waits, leading the pane's session
# (the terminal's hangup signals it, not dbcheck); setpriv execs, so dbcheck leads it itself.
LAUNCHERS = {
    "runuser": ["runuser", "-u", "haproxy", "--"],
    "setpriv": ["setpriv", "--reuid=haproxy", "--regid=haproxy", "--init-groups", "--"],
}


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_status_watch_ends_when_its_terminal_goes_away(launcher, redis_cluster, redis_dbcheck_setup,
                                                       dbcheck_bin, workdir, figures):
    """tmux killed under a running --watch (a closed window, a dropped SSH session): the watch
    and whatever ran it end, none left behind."""
    master = redis_cluster.wait_stable()
    haproxy_cfg = _redis_haproxy_cfg(redis_cluster, redis_dbcheck_setup, workdir)
    tmux = ["tmux", "-L", f"dbcheck-status-{launcher}-{os.getpid()}"]
    cmd = " ".join([*LAUNCHERS[launcher], str(dbcheck_bin), "--config", str(redis_dbcheck_setup.config),
                    "status", "cache", "--watch", "--haproxy-config", str(haproxy_cfg)])
    subprocess.run([*tmux, "new-session", "-d", "-x", "80", "-y", "30", cmd], check=True, timeout=10)
    started = []
    try:
        wait_until(lambda: f"master {master.addr}" in subprocess.run(
            [*tmux, "capture-pane", "-p", "-t", "0"], capture_output=True, text=True, timeout=10).stdout,
            30, "the watch showing the master")
        started = _pane_processes(tmux)
        assert any(open(f"/proc/{pid}/comm").read().strip() == "dbcheck" for pid, _ in started), started
    finally:
        subprocess.run([*tmux, "kill-server"], timeout=10)
        took = _assert_all_end(started)
    figures(f"status --watch under {launcher}, terminal killed",
            f"{len(started)} processes ({launcher} and dbcheck, or dbcheck alone) all gone {took:.1f}s "
            "after tmux kill-server")


def _watch(dbcheck_bin, redis_dbcheck_setup, haproxy_cfg, stdout):
    """--watch as user haproxy, started by us (setpriv execs: the PID is dbcheck's)."""
    return subprocess.Popen([*LAUNCHERS["setpriv"], str(dbcheck_bin), "--config",
                             str(redis_dbcheck_setup.config), "status", "cache", "--watch",
                             "--haproxy-config", str(haproxy_cfg)],
                            stdout=stdout, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def _ends(p, timeout=10):
    try:
        return p.wait(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_status_watch_ends_on_hangup_a_closed_pipe_or_terminal(redis_cluster, redis_dbcheck_setup,
                                                               dbcheck_bin, workdir):
    """Each way its output can go away ends --watch with 129, promptly (bounded waits)."""
    redis_cluster.wait_stable()
    haproxy_cfg = _redis_haproxy_cfg(redis_cluster, redis_dbcheck_setup, workdir)
    # SIGHUP, as a terminal's hangup sends it to the session leader.
    p = _watch(dbcheck_bin, redis_dbcheck_setup, haproxy_cfg, subprocess.PIPE)
    assert p.stdout.read(1), p.stderr.read()
    p.send_signal(signal.SIGHUP)
    assert _ends(p) == 129
    # The pipe's reader gone (EPIPE: dbcheck ignores SIGPIPE).
    p = _watch(dbcheck_bin, redis_dbcheck_setup, haproxy_cfg, subprocess.PIPE)
    assert p.stdout.read(1), p.stderr.read()
    p.stdout.close()
    assert _ends(p) == 129
    assert "the output is gone" in p.stderr.read().decode(), "no word on why it ended"
    # A terminal whose other side closed, not its controlling one (no SIGHUP comes): EIO.
    master_fd, slave_fd = pty.openpty()
    p = _watch(dbcheck_bin, redis_dbcheck_setup, haproxy_cfg, slave_fd)
    os.close(slave_fd)
    try:
        assert os.read(master_fd, 1)
    finally:
        os.close(master_fd)
    assert _ends(p) == 129
