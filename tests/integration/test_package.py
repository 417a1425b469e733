"""The .deb that `cpack` builds: it installs on this machine, puts every file where the man
pages and the unit say, its unit passes `systemd-analyze verify`, and the installed binaries
check a real cluster (the agent run as the package's `dbcheck` user, as the unit would).
The package is purged again at the end."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fixtures.agent import agent_section, http_get
from fixtures.dbcheck import write_dbcheck_config
from fixtures.ports import free_ports
from fixtures.procs import start_daemon, wait_until

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("DBCHECK_BUILD_DIR") or REPO / "build")
UNIT = Path("/usr/lib/systemd/system/dbcheck-agent.service")
FILES = [Path("/usr/bin/dbcheck"), Path("/usr/sbin/dbcheck-agent"), UNIT,
         Path("/usr/share/man/man1/dbcheck.1.gz"), Path("/usr/share/man/man8/dbcheck-agent.8.gz"),
         Path("/usr/share/man/man5/dbcheck.toml.5.gz"), Path("/usr/share/doc/dbcheck/README.md"),
         Path("/usr/share/doc/dbcheck/examples/postgres-patroni.cfg"),
         Path("/usr/share/doc/dbcheck/sql/healthcheck-role.sql"),
         Path("/usr/share/bash-completion/completions/dbcheck")]


def run(argv, timeout=120, check=True, **kw):
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and res.returncode != 0:
        raise AssertionError(f"{argv} exited {res.returncode}:\n{res.stdout}{res.stderr}")
    return res


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Build the .deb from the build tree with cpack, install it with dpkg, purge it after."""
    if run(["dpkg-query", "-W", "-f=${Status}", "dbcheck"], check=False).stdout.startswith("install ok"):
        pytest.fail("a dbcheck package is already installed on this machine: not touching it", pytrace=False)
    out = tmp_path_factory.mktemp("deb")
    run(["cpack", "-G", "DEB", "--config", str(BUILD / "CPackConfig.cmake"), "-B", str(out)], timeout=300)
    debs = list(out.glob("dbcheck_*.deb"))
    assert len(debs) == 1, list(out.iterdir())
    run(["dpkg", "-i", str(debs[0])], env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    try:
        yield debs[0]
    finally:
        run(["dpkg", "--purge", "dbcheck"], check=False)


def test_package_installs_every_file(installed):
    listed = set(run(["dpkg", "-L", "dbcheck"]).stdout.split())
    for f in FILES:
        assert str(f) in listed and f.exists(), f
    for page in ("dbcheck", "dbcheck-agent", "dbcheck.toml"):
        assert run(["man", "-w", page]).stdout.strip().endswith(".gz"), page
    assert run(["getent", "passwd", "dbcheck"]).stdout.startswith("dbcheck:")
    version = run(["/usr/bin/dbcheck", "--version"]).stdout
    assert "libpq" in version and "hiredis" in version and "libcurl" in version, version


def test_agent_unit_verifies(installed):
    text = UNIT.read_text()
    assert "ExecStart=/usr/sbin/dbcheck-agent " in text and "Type=notify" in text and "User=dbcheck" in text
    for hardening in ("NoNewPrivileges=yes", "ProtectSystem=strict", "WatchdogSec="):
        assert hardening in text, hardening
    res = run(["systemd-analyze", "verify", str(UNIT)], check=False)
    assert res.returncode == 0, res.stdout + res.stderr


def test_installed_binaries_check_a_real_cluster(installed, pg_cluster, workdir):
    leader = pg_cluster.wait_healthy()
    cfg = write_dbcheck_config(workdir / "dbcheck", pg_cluster, owner="dbcheck")
    res = run(["/usr/bin/dbcheck", "--config", str(cfg), "check", "pg_write", leader.pg_addr], check=False)
    assert res.returncode == 0 and "UP" in res.stdout, res.stdout + res.stderr
    # The agent as the unit runs it: user dbcheck, the same config plus [agent].
    agent_port, http_port = free_ports(2)
    state = workdir / "agent-state"
    state.mkdir()
    shutil.chown(state, "dbcheck", "dbcheck")
    cfg = write_dbcheck_config(workdir / "agent", pg_cluster, owner="dbcheck", extra=agent_section(
        agent_port, http_port, {"pg": leader.pg_addr}, state_dir=str(state)))
    agent = start_daemon("installed-agent", ["/usr/sbin/dbcheck-agent", "--config", str(cfg)],
                         workdir / "agent.log", user="dbcheck")
    try:
        status, body = wait_until(
            lambda: (r := http_get(http_port, "/backend/pg_write", timeout=0.5))[0] == 200 and r, 20,
            "the installed agent answering 200 for pg_write", daemons=[agent])
        assert "UP" in body or "up" in body, body
        health = json.loads(http_get(http_port, "/health")[1])
        assert health["backends"]["pg_write"]["reported"]["state"] == "up", health
    finally:
        agent.stop(20)
