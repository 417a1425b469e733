"""dbcheck run as HAProxy runs it (a new process per check) logs every failure, and a pass only
when it differs from the server's last line ([log] passes = "changes", the default): 200
passing checks of one server write one line. Its syslog is captured in a mount namespace of the
test's own whose /dev/log leads to the test's socket; the host's /dev is untouched."""

import os
import signal
import subprocess
import time

import pytest

from lab.dbcheck import write_dbcheck_config
from lab.syslog import Syslog

# Inside a private mount namespace: a tmpfs over /dev holding the few devices a check may
# open, and /dev/log as a symbolic link to the test's datagram socket (argument 1: its dir).
NAMESPACE_SH = r"""set -e
W="$1"; shift
mkdir -p "$W/realdev"
mount --bind /dev "$W/realdev"
mount -t tmpfs -o mode=0755,size=64k dbcheck-test-dev /dev
for n in null zero full random urandom; do
  : > "/dev/$n"; mount --bind "$W/realdev/$n" "/dev/$n"
done
ln -s /proc/self/fd /dev/fd
ln -s "$W/syslog.sock" /dev/log
umount -l "$W/realdev"
exec "$@"
"""

# N checks of one server as HAProxy starts them; prints how many passed and failed.
LOOP_SH = r"""n=0; passed=0; failed=0
while [ "$n" -lt "$N" ]; do
  if "$DBCHECK" --config "$CONFIG" 0.0.0.0 0 "$HOST" "$PORT"; then passed=$((passed+1));
  else failed=$((failed+1)); fi
  n=$((n+1))
done
echo "$passed $failed"
"""


@pytest.fixture
def syslog(workdir):
    log = Syslog(workdir)
    yield log
    log.close()


def run_checks(dbcheck_bin, config, syslog, backend, addr, n, timeout=900):
    """Run `n` checks of `addr` in `backend` one after another, as HAProxy does, inside the
    namespace whose /dev/log is `syslog`. Returns (passed, failed, seconds). The whole
    process group is killed if it overruns."""
    host, port = addr.rsplit(":", 1)
    env = dict(os.environ, N=str(n), DBCHECK=str(dbcheck_bin), CONFIG=str(config), HOST=host,
               PORT=port, HAPROXY_PROXY_NAME=backend, HAPROXY_SERVER_ADDR=host,
               HAPROXY_SERVER_PORT=port)
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", NAMESPACE_SH, "sh",
            str(syslog.dir), "sh", "-c", LOOP_SH]
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert proc.returncode == 0, (out, err)
    passed, failed = (int(x) for x in out.split())
    return passed, failed, time.monotonic() - started


def config_with(workdir, pg_cluster, name, log="", writer_role="primary"):
    """A dbcheck.toml for pg_cluster in workdir/name whose [log] keeps its records in
    workdir/log-state (shared by every config of the test, as one host's checks share one
    directory); `log`: more [log] lines; `writer_role`: pg_write's role."""
    cfg = write_dbcheck_config(workdir / name, pg_cluster, owner=None, timeout="3s",
                               extra=f'\n[log]\nstate_dir = "{workdir}/log-state"\n{log}')
    if writer_role != "primary":
        text = cfg.read_text().replace('[backend.pg_write]\ncluster = "pg"\nrole = "primary"',
                                       f'[backend.pg_write]\ncluster = "pg"\nrole = "{writer_role}"')
        cfg.write_text(text)
    return cfg


def test_two_hundred_passing_checks_of_one_server_write_one_line(pg_cluster, dbcheck_bin, workdir,
                                                                 syslog, figures):
    leader = pg_cluster.wait_healthy()
    config = config_with(workdir, pg_cluster, "changes")
    passed, failed, seconds = run_checks(dbcheck_bin, config, syslog, "pg_write", leader.pg_addr, 200)
    lines = syslog.drain()
    ups = [x for x in lines if x.startswith(f"pg_write {leader.pg_addr} UP: ")]
    # Every failure (a check that timed out on a loaded machine) is logged, and each recovery
    # once; with none, the first pass is the only line.
    assert len(lines) - len(ups) == failed, lines
    assert len(ups) <= 1 + failed, lines
    if failed == 0:
        assert len(ups) == 1, lines
    assert passed + failed == 200
    # What 200 checks left behind: this server's record and its lock, in a private directory.
    state = workdir / "log-state"
    assert state.stat().st_mode & 0o777 == 0o700
    assert sorted(p.suffix for p in state.iterdir()) == [".last", ".lock"], list(state.iterdir())
    figures("log passes", f"200 checks of the writer as HAProxy runs them ({passed} passed, "
            f"{failed} failed): {len(lines)} syslog line(s) with [log] passes = \"changes\"; "
            f"{seconds / 200 * 1000:.1f} ms per check, process and all")


def test_every_pass_is_logged_when_asked(pg_cluster, dbcheck_bin, workdir, syslog):
    leader = pg_cluster.wait_healthy()
    config = config_with(workdir, pg_cluster, "all", log='passes = "all"')
    passed, failed, _ = run_checks(dbcheck_bin, config, syslog, "pg_write", leader.pg_addr, 20)
    lines = syslog.drain()
    assert len(lines) == 20, lines
    assert len([x for x in lines if " UP: " in x]) == passed


def test_failures_are_all_logged_and_each_recovery_once(pg_cluster, dbcheck_bin, workdir, syslog):
    """A replica checked as pg_write fails (role) every time; the same (backend, server) made to
    pass (a config whose pg_write takes replicas) logs its first pass only, after each run of
    failures."""
    pg_cluster.wait_healthy()
    replica = pg_cluster.replicas()[0].pg_addr
    failing = config_with(workdir, pg_cluster, "failing")
    passing = config_with(workdir, pg_cluster, "passing", writer_role="replica")
    expected = []
    for round_ in range(2):
        passed, failed, _ = run_checks(dbcheck_bin, failing, syslog, "pg_write", replica, 5)
        assert (passed, failed) == (0, 5)
        expected += ["DOWN"] * 5
        passed, failed, _ = run_checks(dbcheck_bin, passing, syslog, "pg_write", replica, 5)
        assert (passed, failed) == (5, 0)
        expected += ["UP"]
    lines = syslog.drain()
    assert [x.split(" ")[2].rstrip(":") for x in lines] == expected, lines
    assert all(x.startswith(f"pg_write {replica} ") for x in lines), lines


def test_a_quiet_server_is_logged_again_after_the_heartbeat(pg_cluster, dbcheck_bin, workdir, syslog):
    leader = pg_cluster.wait_healthy()
    config = config_with(workdir, pg_cluster, "heartbeat", log='pass_heartbeat = "1s"')
    assert run_checks(dbcheck_bin, config, syslog, "pg_write", leader.pg_addr, 1)[:2] == (1, 0)
    time.sleep(1.2)  # past the heartbeat since the first line's record
    assert run_checks(dbcheck_bin, config, syslog, "pg_write", leader.pg_addr, 1)[:2] == (1, 0)
    lines = syslog.drain()
    assert len(lines) == 2 and all(" UP: " in x for x in lines), lines
