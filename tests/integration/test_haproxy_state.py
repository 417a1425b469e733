"""`dbcheck haproxy-state`: a cold start of HAProxy 2.6 (no `init-state` before 3.1) begins
with every server UP until its checks fail; the server-state file dbcheck writes from current
verdicts makes it begin with only the right ones UP. Real HAProxy, real Patroni cluster, the
shipped example configuration (which already names a `server-state-file` and loads it)."""

import shutil
import subprocess

from fixtures.haproxy import render_example_for, timestamped_log
from fixtures.procs import wait_until

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


def test_an_unloadable_config_starts_every_checked_server_down(pg_cluster, dbcheck_bin, workdir):
    """Fail safe: when dbcheck cannot load its configuration, every server HAProxy checks
    starts DOWN (its checks bring it UP), the file is still written, and the exit code is 2."""
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
    rows = [line.split() for line in out.read_text().splitlines()[2:]]
    assert len(rows) == 6 and all(row[5] == "0" for row in rows), rows  # srv_op_state STOPPED
