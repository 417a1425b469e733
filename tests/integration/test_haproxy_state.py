"""`dbcheck haproxy-state`: a cold start of HAProxy 2.6 (no `init-state` before 3.1) begins
with every server UP until its checks fail; the server-state file dbcheck writes from current
verdicts makes it begin with only the right ones UP. Real HAProxy, real Patroni cluster, the
shipped example configuration (which already names a `server-state-file` and loads it)."""

import os
import shutil
import subprocess

from lab.haproxy import render_example_for, timestamped_log
from lab.procs import wait_until

ROUTING_TIMEOUT = 30


def _haproxy_state(dbcheck_bin, config, haproxy_cfg, output, user=None):
    """`dbcheck haproxy-state` for `haproxy_cfg`, writing `output`, as `user` when given (with
    runuser, as the package's drop-in for haproxy.service runs it); the CompletedProcess."""
    argv = [str(dbcheck_bin), "--config", str(config), "haproxy-state", "--haproxy-config", str(haproxy_cfg),
            "--output", str(output)]
    if user:
        argv = ["runuser", "-u", user, "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_cold_start_with_the_state_file_has_only_the_right_servers_up(
        pg_cluster, dbcheck_setup, dbcheck_bin, haproxy_factory, workdir, figures):
    leader = pg_cluster.wait_healthy()
    replicas = sorted(m.name for m in pg_cluster.replicas())
    sock = workdir / "haproxy" / "admin.sock"
    sock.parent.mkdir(mode=0o755, exist_ok=True)
    cfg, _ = render_example_for(pg_cluster, dbcheck_setup.wrapper, sock)
    state_file = sock.parent / "server-state"
    assert f"server-state-file {state_file}\n" in cfg and "load-server-state-from-file global" in cfg
    cfg_file = workdir / "haproxy-for-dbcheck.cfg"
    cfg_file.write_text(cfg)

    # As the drop-in does: user haproxy, who owns the password file, writing where it may
    # (/run/haproxy in the package; here the test's HAProxy directory, given to that user).
    shutil.chown(sock.parent, "haproxy", "haproxy")
    r = _haproxy_state(dbcheck_bin, dbcheck_setup.config, cfg_file, state_file, user="haproxy")
    assert r.returncode == 0, r.stderr
    # Each server's verdict, with its reason, on stderr.
    assert f"pg_write/{leader.name} starts UP" in r.stderr, r.stderr
    for name in replicas:
        assert f"pg_write/{name} starts DOWN" in r.stderr, r.stderr
        assert f"pg_read/{name} starts UP" in r.stderr, r.stderr
    assert f"pg_read/{leader.name} starts DOWN" in r.stderr, r.stderr
    assert state_file.stat().st_mode & 0o777 == 0o644
    lines = state_file.read_text().splitlines()
    assert lines[0] == "1" and lines[1].startswith("# be_id be_name") and len(lines) == 2 + 6, lines

    hap = haproxy_factory(timestamped_log(cfg), name="haproxy-cold")
    # The first `show stat`, before any check could have changed a thing, and HAProxy's own
    # log: nothing refused in the file, no server went UP or DOWN by a check since.
    first_write, first_read = hap.servers_up("pg_write"), sorted(hap.servers_up("pg_read"))
    log = hap.log_path.read_text()
    assert "server-state application failed" not in log and "partially applied" not in log, log
    assert "corrupted" not in log and "Can't open" not in log and "Can't get version" not in log, log
    assert first_write == [leader.name], first_write
    assert first_read == replicas, first_read
    # And the checks agree: it stays that way once every server has been checked.
    hap.wait_until_checked("pg_write")
    hap.wait_until_checked("pg_read")
    assert hap.servers_up("pg_write") == [leader.name]
    assert sorted(hap.servers_up("pg_read")) == replicas
    assert not [e for e in hap.state_events("pg_write") if e[1] == leader.name], hap.state_events("pg_write")
    hap.stop()

    # The contrast: the same HAProxy without the file starts every server UP, and HAProxy's own
    # log shows the replicas' checks taking them down (a `show stat` would race those checks).
    state_file.unlink()
    bare = haproxy_factory(timestamped_log(cfg), name="haproxy-bare")
    went_down = lambda: {srv for _, srv, state in bare.state_events("pg_write")  # noqa: E731
                         if state == "DOWN"}
    wait_until(lambda: set(replicas) <= went_down(), ROUTING_TIMEOUT,
               "the bare HAProxy taking the replicas down")
    bare.stop()
    figures("haproxy-state cold start",
            f"with dbcheck's state file HAProxy's first show stat: pg_write UP {first_write}, pg_read UP "
            f"{first_read}; without it every server started UP and HAProxy's checks took "
            f"{sorted(went_down())} down in pg_write")


def _state_rows(text):
    """{(backend, server): fields} of a server-state file's data lines."""
    rows = [line.split() for line in text.splitlines()[1:] if line.strip() and not line.startswith("#")]
    return {(r[1], r[3]): r for r in rows}


def test_admin_states_and_other_backends_survive_a_run(
        pg_cluster, dbcheck_setup, dbcheck_bin, haproxy_factory, workdir):
    """A restart with the drop-in keeps what is not dbcheck's: HAProxy runs with an operator's
    MAINT and DRAIN on dbcheck's servers and on a backend that is not dbcheck's (and a weight
    set there); its state is saved with `show servers state`; haproxy-state runs on that file;
    a new HAProxy started from it has every admin state, the other backend's line as saved,
    and dbcheck's UP and DOWN."""
    leader = pg_cluster.wait_healthy()
    replicas = sorted(m.name for m in pg_cluster.replicas())
    sock = workdir / "haproxy" / "admin.sock"
    sock.parent.mkdir(mode=0o755, exist_ok=True)
    cfg, _ = render_example_for(pg_cluster, dbcheck_setup.wrapper, sock)
    state_file = sock.parent / "server-state"
    # A backend dbcheck.toml does not name, checked by HAProxy alone (a TCP connect).
    web = [m.pg_addr for m in pg_cluster.members()][:2]
    cfg += ("\nbackend web\n    balance roundrobin\n    default-server inter 1s\n"
            f"    server w1 {web[0]} check\n    server w2 {web[1]} check\n")
    cfg_file = workdir / "haproxy-for-dbcheck.cfg"
    cfg_file.write_text(cfg)

    before = haproxy_factory(timestamped_log(cfg), name="haproxy-before")
    before.wait_until_checked("pg_write")
    before.wait_until_checked("pg_read")
    before.wait_until_checked("web")
    for cmd in (f"set server pg_write/{leader.name} state drain",
                f"set server pg_read/{replicas[0]} state maint",
                "set server web/w1 state maint", "set server web/w2 state drain", "set weight web/w2 7"):
        assert before.command(cmd).strip() == "", cmd
    # What an operator runs before a restart (the examples' comments): HAProxy's own dump.
    dump = before.command("show servers state")
    assert dump.startswith("1\n"), dump
    state_file.write_text(dump)
    before.stop()
    saved = _state_rows(dump)
    assert saved[("web", "w2")][7] == "7", saved  # srv_uweight

    shutil.chown(sock.parent, "haproxy", "haproxy")
    r = _haproxy_state(dbcheck_bin, dbcheck_setup.config, cfg_file, state_file, user="haproxy")
    assert r.returncode == 0, r.stderr
    assert f"pg_write/{leader.name} starts UP (kept in DRAIN)" in r.stderr, r.stderr
    assert f"pg_read/{replicas[0]} starts UP (kept in MAINT)" in r.stderr, r.stderr
    assert f"pg_read/{replicas[1]} starts UP:" in r.stderr, r.stderr
    assert "web/" not in r.stderr, r.stderr
    text = state_file.read_text()
    # The other backend's lines, byte for byte as HAProxy saved them.
    for line in dump.splitlines():
        if line.split()[1:2] == ["web"]:
            assert line + "\n" in text, (line, text)
    written = _state_rows(text)
    assert written.keys() == saved.keys(), (written.keys(), saved.keys())
    assert written[("pg_write", leader.name)][5:7] == ["2", "8"], written  # RUNNING, FDRAIN
    assert written[("pg_read", replicas[0])][5:7] == ["2", "1"], written  # RUNNING, FMAINT
    assert all(written[("pg_write", n)][5] == "0" for n in replicas), written  # STOPPED

    after = haproxy_factory(timestamped_log(cfg), name="haproxy-after")
    log = after.log_path.read_text()
    assert "server-state application failed" not in log and "partially applied" not in log, log
    live = {(b, row["srv_name"]): row
            for b in ("pg_write", "pg_read", "web") for row in after.servers_state(b)}
    assert int(live[("pg_write", leader.name)]["srv_admin_state"]) & 0x08, live  # DRAIN
    assert int(live[("pg_read", replicas[0])]["srv_admin_state"]) & 0x01, live   # MAINT
    assert int(live[("web", "w1")]["srv_admin_state"]) & 0x01, live
    assert int(live[("web", "w2")]["srv_admin_state"]) & 0x08, live
    assert live[("web", "w2")]["srv_uweight"] == "7", live
    for n in replicas:
        assert int(live[("pg_write", n)]["srv_admin_state"]) == 0, live
    # dbcheck's UP and DOWN, in HAProxy's own words: the drained leader still UP (DRAIN is an
    # admin state, not a check's), the replicas not.
    stat = {(r["pxname"], r["svname"]): r["status"] for r in after.show_stat()}
    assert stat[("pg_write", leader.name)].startswith(("DRAIN", "UP")), stat
    assert all(stat[("pg_write", n)].startswith("DOWN") for n in replicas), stat
    assert stat[("pg_read", replicas[0])].startswith("MAINT"), stat
    assert stat[("web", "w1")].startswith("MAINT"), stat
    after.stop()


def test_without_dbcheck_toml_the_file_is_left_as_it_was(pg_cluster, dbcheck_bin, workdir):
    """An agent-mode HAProxy host has no dbcheck.toml: nothing is checked nor written, the
    saved file stays byte for byte, the reason is on stderr, and the exit is 0 (the drop-in
    must never keep HAProxy from starting)."""
    sock = workdir / "haproxy" / "admin.sock"
    cfg, _ = render_example_for(pg_cluster, "/bin/false", sock)
    cfg_file = workdir / "haproxy.cfg"
    cfg_file.write_text(cfg)
    sock.parent.mkdir(mode=0o755, exist_ok=True)
    state_file = sock.parent / "server-state"
    saved = "1\n# be_id be_name srv_id srv_name\n2 pg_write 1 pg1 127.0.0.1 2 1 1 1 5 15 3 4 6 0 0 0 - 1 -\n"
    state_file.write_text(saved)
    os.utime(state_file, (1_000_000_000, 1_000_000_000))
    absent = workdir / "etc-dbcheck" / "dbcheck.toml"
    r = subprocess.run([str(dbcheck_bin), "--config", str(absent), "haproxy-state", "--haproxy-config",
                        str(cfg_file), "--write-state-file"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert f"{absent} does not exist" in r.stderr and f"{state_file} is left as it was" in r.stderr, r.stderr
    assert "starts" not in r.stderr, r.stderr
    assert state_file.read_text() == saved and state_file.stat().st_mtime == 1_000_000_000


def test_an_unloadable_config_leaves_the_file_as_it_was(pg_cluster, dbcheck_bin, workdir):
    """When dbcheck cannot load its configuration it cannot tell its backends from others:
    no server's start is changed (the file is not written, nor created), the errors are on
    stderr, and the exit code is 2."""
    sock = workdir / "haproxy" / "admin.sock"
    cfg, _ = render_example_for(pg_cluster, "/bin/false", sock)
    cfg_file = workdir / "haproxy.cfg"
    cfg_file.write_text(cfg)
    broken = workdir / "broken.toml"
    broken.write_text("[cluster.pg\nkind = 1\n")
    out = workdir / "state"
    r = _haproxy_state(dbcheck_bin, broken, cfg_file, out)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "configuration error" in r.stderr and str(broken) in r.stderr, r.stderr
    assert "cannot tell dbcheck's backends from others" in r.stderr, r.stderr
    assert not out.exists()
    out.write_text("1\n")
    r = _haproxy_state(dbcheck_bin, broken, cfg_file, out)
    assert r.returncode == 2 and out.read_text() == "1\n", (r.returncode, r.stderr)


def test_a_saved_file_of_another_format_is_not_overwritten(pg_cluster, dbcheck_setup, dbcheck_bin, workdir):
    """A file at the state file's place that is not a version-1 server-state file is not
    dbcheck's to replace: left as it was, named on stderr, exit 2."""
    sock = workdir / "haproxy" / "admin.sock"
    sock.parent.mkdir(mode=0o755, exist_ok=True)
    cfg, _ = render_example_for(pg_cluster, dbcheck_setup.wrapper, sock)
    cfg_file = workdir / "haproxy.cfg"
    cfg_file.write_text(cfg)
    state_file = sock.parent / "server-state"
    state_file.write_text("2\n# a later format\n")
    r = subprocess.run([str(dbcheck_bin), "--config", str(dbcheck_setup.config), "haproxy-state",
                        "--haproxy-config", str(cfg_file), "--write-state-file"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert str(state_file) in r.stderr and "not a version-1 server-state file" in r.stderr, r.stderr
    assert state_file.read_text() == "2\n# a later format\n"
