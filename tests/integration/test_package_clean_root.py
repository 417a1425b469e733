"""The .deb in a clean root of its own release: `apt-get install ./dbcheck_*.deb` in a minimal
Debian root where nothing else was installed (essential packages and apt, from
scripts/clean-root: $DBCHECK_CLEAN_ROOT names its tarball) brings every library the package
needs through its Depends alone; the installed dbcheck then runs the ExecStartPre of the
package's haproxy.service drop-in and the external check, as HAProxy calls it, against a real
Patroni cluster on 127.0.0.1; and `apt-get purge` takes it away with its user.

Each command runs chrooted in a private mount namespace of its own (/proc, /sys and a /dev made
of the host's devices, whose /dev/log is the test's socket): every mount ends with its command,
nothing is ever mounted on the host, and the extracted root is deleted at the end."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab import peers
from lab.dbcheck import write_dbcheck_config
from lab.deb import build_deb, run
from lab.haproxy import EXAMPLE_CFG, EXAMPLE_DBCHECK, EXAMPLE_SERVERS, EXAMPLE_STATS_SOCKET, \
    render_example
from lab.procs import pid_alive, stop_pid
from lab.syslog import Syslog

# In the new mount namespace, before the chroot: argument 1 is the root, the rest the command.
# /dev is a tmpfs holding the host's few devices a program opens (not the host's whole /dev:
# the root's /dev/log must lead to the test's socket, and nothing may be created in the host's).
ENTER_SH = r"""set -e
R="$1"; shift
mount -t proc proc "$R/proc"
mount --rbind /sys "$R/sys"
mount -t tmpfs -o mode=0755,size=1m,nosuid dbcheck-clean-dev "$R/dev"
for n in null zero full random urandom tty; do
  : > "$R/dev/$n"; mount --bind "/dev/$n" "$R/dev/$n"
done
mkdir "$R/dev/pts" "$R/dev/shm"
if [ -e /dev/pts/ptmx ]; then mount --bind /dev/pts "$R/dev/pts"; ln -s pts/ptmx "$R/dev/ptmx"; fi
mount -t tmpfs -o mode=1777,nosuid,nodev dbcheck-clean-shm "$R/dev/shm"
ln -s /proc/self/fd "$R/dev/fd"
ln -s /proc/self/fd/0 "$R/dev/stdin"
ln -s /proc/self/fd/1 "$R/dev/stdout"
ln -s /proc/self/fd/2 "$R/dev/stderr"
ln -s /dbcheck-test-log/syslog.sock "$R/dev/log"
exec chroot "$R" /usr/bin/env -i "$@"
"""
ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What Debian's haproxy.service runs the drop-in's ExecStartPre with (Environment=CONFIG=...).
HAPROXY_CFG = "/etc/haproxy/haproxy.cfg"
DROP_IN = "/usr/share/dbcheck/haproxy-dbcheck-state.conf"
CODENAMES = {"12": "bookworm", "13": "trixie"}

# Before any fixture: the session's Patroni cluster is not started for tests that cannot run.
pytestmark = pytest.mark.skipif(
    not os.environ.get("DBCHECK_CLEAN_ROOT"),
    reason=f"DBCHECK_CLEAN_ROOT is not set: make the tarball with `./scripts/clean-root "
           f"{CODENAMES.get(peers.release(), 'CODENAME')} build/clean-root.tar` and set DBCHECK_CLEAN_ROOT "
           f"to its path")


class CleanRoot:
    """A root extracted from scripts/clean-root's tarball into `path`; `run` runs a command in
    it as root, in a mount namespace that ends with the command."""

    def __init__(self, path):
        self.path = path

    def file(self, inside):
        """The host's path of `inside`, a path in the root."""
        return self.path / inside.lstrip("/")

    def run(self, argv, env=None, timeout=120, check=True):
        """`argv` in the root with an environment of PATH, LANG, HOME and `env` only; the
        CompletedProcess. A command still running at `timeout` is killed with everything it
        started (its own process group)."""
        envs = [f"{k}={v}" for k, v in {"PATH": ROOT_PATH, "LANG": "C.UTF-8", "HOME": "/root",
                                        **(env or {})}.items()]
        full = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", ENTER_SH, "sh",
                str(self.path), *envs, *argv]
        proc = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise AssertionError(f"{argv} in the clean root still ran after {timeout}s:\n{out}{err}")
        res = subprocess.CompletedProcess(argv, proc.returncode, out, err)
        if check and res.returncode != 0:
            raise AssertionError(f"{argv} in the clean root exited {res.returncode}:\n{out}{err}")
        return res

    def user(self, name):
        """(uid, gid) of `name` in the root's own user database, or None."""
        for line in self.file("/etc/passwd").read_text().splitlines():
            fields = line.split(":")
            if fields[0] == name:
                return int(fields[2]), int(fields[3])
        return None

    def has_group(self, name):
        return any(line.split(":")[0] == name for line in self.file("/etc/group").read_text().splitlines())


def _mounts_under(path):
    """The mount points at or under `path` in this process's mount namespace."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == str(path) or point.startswith(f"{path}/"):
            found.append(point)
    return found


def _processes_in(path):
    """PIDs of the processes whose root directory is `path` (chrooted into it)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/root") == str(path):
                    pids.append(int(entry))
            except OSError:
                pass
    return pids


def _remove_root(path):
    """Delete the extracted root: first stop whatever still runs in it (by PID), then refuse
    to go on if anything is mounted under it (rm would descend into the mount)."""
    leftover = [pid for pid in _processes_in(path) if pid_alive(pid)]
    for pid in leftover:
        stop_pid(pid, timeout=5)
    mounts = _mounts_under(path)
    assert not mounts, f"mounted under the clean root, not deleting {path}: {mounts}"
    run(["rm", "-rf", "--one-file-system", str(path)], timeout=120)
    assert not leftover, f"processes outlived their command in the clean root (stopped now): {leftover}"


@pytest.fixture(scope="module")
def clean_root(tmp_path_factory):
    """The .deb built from the build tree, and a clean root of this release extracted from
    $DBCHECK_CLEAN_ROOT with the .deb in its /tmp; the root is deleted afterwards."""
    tarball = os.environ["DBCHECK_CLEAN_ROOT"]
    release = peers.release()
    codename = CODENAMES[release]
    if not Path(tarball).is_file():
        pytest.fail(f"DBCHECK_CLEAN_ROOT={tarball}: no such file (./scripts/clean-root {codename} {tarball})",
                    pytrace=False)
    deb = build_deb(tmp_path_factory.mktemp("deb"))
    path = Path(tempfile.mkdtemp(prefix="dbcheck-clean-root.", dir="/tmp"))
    try:
        path.chmod(0o755)
        run(["tar", "--numeric-owner", "-xpf", tarball, "-C", str(path)], timeout=300)
        root = CleanRoot(path)
        fields = dict(line.split("=", 1) for line in root.file("/etc/os-release").read_text().splitlines()
                      if "=" in line)
        found = fields.get("VERSION_ID", "").strip('"')
        if found != release:
            pytest.fail(f"DBCHECK_CLEAN_ROOT={tarball} is a Debian {found!r} root, this build Debian "
                        f"{release}'s: make it with ./scripts/clean-root {codename}", pytrace=False)
        # Name resolution for apt's downloads; no service may start from a maintainer script.
        shutil.copy("/etc/resolv.conf", root.file("/etc/resolv.conf"))
        policy = root.file("/usr/sbin/policy-rc.d")
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        shutil.copy(deb, root.file(f"/tmp/{deb.name}"))
        yield SimpleNamespace(root=root, deb=deb, release=release)
    finally:
        _remove_root(path)


def _new_packages(apt_output):
    """The packages apt's summary lists under "The following NEW packages will be installed:"."""
    m = re.search(r"^The following NEW packages will be installed:\n((?:  .*\n)+)", apt_output, re.M)
    return m.group(1).split() if m else []


@pytest.fixture(scope="module")
def installed(clean_root, figures):
    """`apt-get install -y ./dbcheck_*.deb` in the clean root, with apt's package lists as the
    tarball keeps them, and without Recommends (the Depends alone must bring what dbcheck
    needs); the NEW packages apt installed for the .deb's Depends."""
    root = clean_root.root
    install = ["sh", "-c", "cd /tmp && exec apt-get install -y --no-install-recommends ./dbcheck_*.deb"]
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    res = root.run(install, env=env, timeout=600, check=False)
    refreshed = res.returncode != 0 and "Failed to fetch" in res.stdout + res.stderr
    if refreshed:
        # The tarball's lists name a version the archive has since replaced (a security
        # update): fetch the current lists whole (this root is thrown away), then install again.
        print(f"apt could not download with the tarball's lists:\n{res.stdout}{res.stderr}")
        root.run(["sh", "-c", "rm -rf /var/lib/apt/lists/* && exec apt-get update -q"], env=env, timeout=300)
        res = root.run(install, env=env, timeout=600, check=False)
    new = _new_packages(res.stdout)
    deps = [p for p in new if p != "dbcheck"]
    summary = f"apt installed {len(deps)} package(s) for its Depends: {' '.join(deps)}" + \
        (" (with the archive's current lists: the tarball's were out of date)" if refreshed else "")
    assert res.returncode == 0 and "dbcheck" in new, \
        f"apt-get install ./{clean_root.deb.name} exited {res.returncode}; {summary}\n" \
        f"{res.stdout}{res.stderr}"
    figures(f"clean Debian {clean_root.release} root", f"apt-get install ./{clean_root.deb.name}: {summary}")
    print(summary)
    return SimpleNamespace(**vars(clean_root), dependencies=deps)


def test_installs_and_links_every_client_library(installed):
    """The package's Depends brought every library: dbcheck starts, names its client libraries
    and loads each of its modules (libpq, hiredis, libcurl, libevent)."""
    root = installed.root
    version = root.run(["dpkg-query", "-W", "-f=${Status} ${Version}", "dbcheck"]).stdout
    assert version == f"install ok installed {installed.deb.name.split('_')[1]}", version
    assert version.endswith(f"+deb{installed.release}"), version
    res = root.run(["/usr/bin/dbcheck", "--version"])
    for lib in ("libpq", "hiredis", "libcurl", "libevent"):
        assert lib in res.stdout, (lib, res.stdout, res.stderr)
    # The agent links them at start too (no module loading there).
    res = root.run(["/usr/sbin/dbcheck-agent", "--version"])
    assert all(lib in res.stdout for lib in ("libpq", "hiredis", "libcurl", "libevent")), res.stdout
    assert root.user("dbcheck"), "postinst made no dbcheck user"


def _place_config(root, pg_cluster, owner):
    """/etc/dbcheck/dbcheck.toml (0644, root's) and its password file (0600, `owner`'s, the user
    the check runs as) in the root, naming the files by their paths inside it."""
    etc = root.file("/etc/dbcheck")
    config = write_dbcheck_config(etc, pg_cluster, owner=None)
    config.write_text(config.read_text().replace(f'"{etc}/', '"/etc/dbcheck/'))
    os.chown(etc / "pg.password", *owner)
    return config


def _haproxy_cfg(pg_cluster):
    """haproxy-examples/postgres-patroni.cfg as /etc/haproxy/haproxy.cfg would hold it, with
    the cluster's members for the example's servers: /usr/bin/dbcheck the check, the
    server-state file in /run/haproxy (no HAProxy is started: it only names the servers)."""
    members = pg_cluster.members()
    text = render_example(EXAMPLE_CFG, servers=dict(zip(EXAMPLE_SERVERS, [m.pg_addr for m in members])),
                          frontend_ports={}, dbcheck_path=EXAMPLE_DBCHECK,
                          stats_socket_path=EXAMPLE_STATS_SOCKET)
    return "".join(line for line in text.splitlines(True)
                   if not any(u in line for u in EXAMPLE_SERVERS[len(members):]))


def test_exec_start_pre_and_the_external_check_judge_a_real_cluster(installed, pg_cluster):
    """As the drop-in's ExecStartPre (user haproxy, /etc/haproxy/haproxy.cfg naming the
    server-state file): the leader starts UP in pg_write, the replicas DOWN, each verdict with
    its reason. As HAProxy calls the external check (user haproxy, only PATH and HAPROXY_*
    in the environment, no argument of ours): the leader passes pg_write, a replica fails it,
    and syslog has each verdict's reason."""
    root = installed.root
    leader = pg_cluster.wait_healthy()
    replicas = sorted(m.name for m in pg_cluster.replicas())
    # The user Debian's haproxy package makes; here without HAProxy, which is not started.
    root.run(["adduser", "--system", "--group", "--home", "/var/lib/haproxy", "--no-create-home",
              "--quiet", "haproxy"])
    owner = root.user("haproxy")
    _place_config(root, pg_cluster, owner)
    cfg = root.file(HAPROXY_CFG)
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(_haproxy_cfg(pg_cluster))
    run_dir = root.file("/run/haproxy")
    run_dir.mkdir(mode=0o755, exist_ok=True)
    os.chown(run_dir, *owner)

    line = re.search(r"^ExecStartPre=-(.*)$", root.file(DROP_IN).read_text(), re.M).group(1)
    argv = line.replace("${CONFIG}", HAPROXY_CFG).split()
    assert argv[:5] == ["/usr/sbin/runuser", "-u", "haproxy", "--", "/usr/bin/dbcheck"], argv
    res = root.run(argv, timeout=60, check=False)
    print(res.stderr)
    assert res.returncode == 0, res
    # Each server's verdict with its reason, the check's own line.
    assert f"pg_write/{leader.name} starts UP: pg_write {leader.pg_addr} UP: Patroni names this node " \
        f"({leader.name}) leader" in res.stderr, res.stderr
    for name in replicas:
        assert f"pg_write/{name} starts DOWN" in res.stderr, res.stderr
        assert f"pg_read/{name} starts UP" in res.stderr, res.stderr
    state = root.file("/run/haproxy/server-state")
    lines = state.read_text().splitlines()
    assert lines[0] == "1" and len(lines) == 2 + 2 * len(pg_cluster.members()), lines
    assert state.stat().st_uid == owner[0], state.stat()
    rows = {(r[1], r[3]): r for r in (ln.split() for ln in lines[2:])}
    assert rows[("pg_write", leader.name)][5] == "2", rows  # RUNNING
    assert all(rows[("pg_write", n)][5] == "0" for n in replicas), rows  # STOPPED

    # The external check as HAProxy runs it, for the leader and a replica in pg_write: its user
    # set with setpriv as HAProxy sets it (no PAM session, whose lines would go to the syslog).
    replica = pg_cluster.member(replicas[0])
    log_dir = root.file("/dbcheck-test-log")
    log_dir.mkdir(mode=0o755)
    syslog = Syslog(log_dir)
    try:
        syslog.path.chmod(0o666)  # the check runs as haproxy
        checks = {}
        for member in (leader, replica):
            host, port = member.pg_addr.rsplit(":", 1)
            env = ["PATH=/usr/bin:/bin", "HAPROXY_PROXY_NAME=pg_write",
                   f"HAPROXY_SERVER_NAME={member.name}", f"HAPROXY_SERVER_ADDR={host}",
                   f"HAPROXY_SERVER_PORT={port}"]
            checks[member.name] = root.run(
                ["setpriv", "--reuid=haproxy", "--regid=haproxy", "--init-groups", "/usr/bin/env", "-i",
                 *env, EXAMPLE_DBCHECK, "NOT_USED", "NOT_USED", host, port], timeout=30, check=False)
        logged = syslog.drain()
    finally:
        syslog.close()
    assert checks[leader.name].returncode == 0, checks
    assert checks[replica.name].returncode == 1, checks
    # Each verdict's line, with its reason: the first check of a server is always logged.
    up = [x for x in logged if x.startswith(f"pg_write {leader.pg_addr} UP: ")]
    down = [x for x in logged if x.startswith(f"pg_write {replica.pg_addr} DOWN: ")]
    assert len(logged) == 2 and len(up) == 1 and len(down) == 1, logged
    assert f"Patroni names this node ({leader.name}) leader" in up[0], up
    assert leader.name in down[0] and "not this node" in down[0], down
    print("\n".join(logged))


def test_purge_removes_the_program_and_its_user(installed):
    """Last: `apt-get purge` leaves neither /usr/bin/dbcheck nor the dbcheck user and group."""
    root = installed.root
    res = root.run(["apt-get", "purge", "-y", "dbcheck"], env={"DEBIAN_FRONTEND": "noninteractive"})
    assert "Purging configuration files for dbcheck" in res.stdout, res.stdout
    assert not root.file("/usr/bin/dbcheck").exists() and not root.file("/usr/sbin/dbcheck-agent").exists()
    assert root.user("dbcheck") is None and not root.has_group("dbcheck")
    assert root.run(["dpkg-query", "-W", "-f=${Status}", "dbcheck"], check=False).stdout \
        in ("", "deinstall ok config-files", "unknown ok not-installed"), "dbcheck still known to dpkg"
