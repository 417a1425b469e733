"""scripts/install-deps (run by both of the README's commands) on a host that already runs
servers of its own: with a package missing, it installs that package and nothing else happens
to the machine. A PostgreSQL cluster, a redis-server and an etcd that it did not start stay
running, and every service's boot-time state and the cluster's start.conf stay as they were."""

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from lab.patroni import ETCD, PG_BIN
from lab.ports import free_ports
from lab.procs import run_as, start_daemon, wait_until
from lab.redis import REDIS_SERVER, redis_pipeline

REPO = Path(__file__).resolve().parents[2]
# A package of the full set that nothing else depends on: removed, then reinstalled by the script.
VICTIM = "time"


def installed(package):
    p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True)
    return "install ok installed" in p.stdout


def boot_state():
    """Every boot-time link (SysV rc.d and systemd .wants) and every PostgreSQL start.conf."""
    links = {p: os.readlink(p) for p in glob.glob("/etc/rc?.d/*") + glob.glob("/etc/systemd/system/*.wants/*")
             if os.path.islink(p)}
    confs = {p: Path(p).read_text() for p in glob.glob("/etc/postgresql/*/*/start.conf")}
    return links, confs


def test_install_deps_leaves_running_servers_and_boot_state_alone():
    if os.geteuid() != 0:
        pytest.fail("needs root: it installs a package", pytrace=False)
    work = Path(tempfile.mkdtemp(prefix="dbcheck-install-deps.", dir="/tmp"))
    work.chmod(0o755)
    pg_port, redis_port, etcd_client, etcd_peer = free_ports(4)
    version = PG_BIN.parent.name  # /usr/lib/postgresql/15/bin -> "15"
    cluster = f"dbcheck_idt{os.getpid()}"
    daemons = []
    try:
        # A Debian cluster started at boot (start.conf auto), as a host's own database would be.
        subprocess.run(["pg_createcluster", "--start-conf", "auto", "-p", str(pg_port), version, cluster],
                       check=True, capture_output=True, timeout=120)
        subprocess.run(["pg_ctlcluster", version, cluster, "start"], check=True, capture_output=True,
                       timeout=60)
        daemons.append(start_daemon("redis", [str(REDIS_SERVER), "--port", str(redis_port), "--bind",
                                              "127.0.0.1", "--save", "", "--appendonly", "no"],
                                    work / "redis.log", user="redis"))
        (work / "etcd").mkdir(mode=0o700)
        shutil.chown(work / "etcd", "etcd", "etcd")
        client, peer = f"http://127.0.0.1:{etcd_client}", f"http://127.0.0.1:{etcd_peer}"
        etcd = [ETCD, "--name", "idt", "--data-dir", str(work / "etcd"),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"idt={peer}"]
        daemons.append(start_daemon("etcd", etcd, work / "etcd.log", user="etcd"))

        def all_answer():
            run_as("postgres", ["psql", "-X", "-At", "-p", str(pg_port), "-c", "SELECT 1"], timeout=10)
            redis_pipeline(redis_port, [("PING",)], timeout=2)
            run_as("root", ["etcdctl", "--endpoints", client, "endpoint", "health"], timeout=10,
                   env={"ETCDCTL_API": "3"})
            return all(d.alive() for d in daemons)

        wait_until(all_answer, 60, "the host's own PostgreSQL, Redis and etcd answer", daemons=daemons)
        before = boot_state()
        pids = [d.pid for d in daemons]

        subprocess.run(["dpkg", "-r", VICTIM], check=True, capture_output=True, timeout=120)
        script = str(REPO / "scripts" / "install-deps")
        p = subprocess.run([script], capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "installing 1 + 0 packages" in p.stdout and VICTIM in p.stdout, p.stdout
        assert installed(VICTIM)

        assert all_answer(), "a server of the host's stopped"
        assert [d.pid for d in daemons] == pids and all(d.alive() for d in daemons)
        assert boot_state() == before, "install-deps changed what starts at boot"
        again = subprocess.run([script], capture_output=True, text=True, timeout=120)
        assert again.returncode == 0 and "packages present" in again.stdout, again.stdout + again.stderr
    finally:
        if not installed(VICTIM):
            subprocess.run(["apt-get", "install", "-y", "-qq", VICTIM], capture_output=True, timeout=600)
        for d in daemons:
            d.stop()
        subprocess.run(["pg_dropcluster", "--stop", version, cluster], capture_output=True, timeout=120)
        shutil.rmtree(work, ignore_errors=True)


def test_install_deps_lists_by_release_and_refuses_unknown_arguments():
    script = str(REPO / "scripts" / "install-deps")

    def listed(*args):
        p = subprocess.run([script, "--list", *args], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p.stdout.split()

    here = listed()
    assert f"postgresql-{PG_BIN.parent.name}" in here  # this machine's release's PostgreSQL
    # Each release by its own names, from either: the Debian 13 root is built from this list.
    bookworm, trixie = listed("--release", "bookworm"), listed("--release", "trixie")
    assert {"postgresql-15", "catch2"} <= set(bookworm) and "postgresql-17" not in bookworm
    assert {"postgresql-17", "libcatch2-dev", "valkey-server"} <= set(trixie)
    lab, build = listed("--lab", "--release", "trixie"), listed("--build", "--release", "trixie")
    assert set(build) < set(lab) < set(trixie) and "mmdebstrap" not in lab and "patroni" in lab
    # --build checks the build dependencies alone.
    ok = subprocess.run([script, "--build"], capture_output=True, text=True)
    assert ok.returncode == 0 and f"all {len(listed('--build'))} packages present" in ok.stdout, \
        ok.stdout + ok.stderr
    bad = subprocess.run([script, "--nonsense"], capture_output=True, text=True)
    assert bad.returncode == 64 and "unknown argument '--nonsense'" in bad.stderr
    other = "trixie" if "postgresql-15" in here else "bookworm"
    elsewhere = subprocess.run([script, "--release", other], capture_output=True, text=True)
    assert elsewhere.returncode == 64 and "use it with --list" in elsewhere.stderr
