"""The .deb that `cpack` builds: it installs on this machine, puts every file where the man
pages and the unit say, its unit passes `systemd-analyze verify`, the installed binaries
check a real cluster (the agent run as the package's `dbcheck` user, as the unit would),
lintian finds no error or warning and hardening-check passes both binaries and the external
check's two client modules. Its maintainer
scripts run under a stand-in for systemd (a private mount namespace where
/run/systemd/system exists, and `systemctl`/`deb-systemd-invoke` that only log): a fresh
install starts nothing, an upgrade try-restarts the agent and does not stop it, removal
stops it. The package is purged at the end, and the purge is checked: user, group and
state gone, the user's files under /etc/dbcheck handed to root and named."""

import gzip
import json
import os
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab import peers
from lab.agent import agent_section, http_get
from lab.dbcheck import write_dbcheck_config
from lab.deb import BUILD, REPO, build_deb, run
from lab.ports import free_ports
from lab.procs import start_daemon, wait_until

UNIT = Path("/usr/lib/systemd/system/dbcheck-agent.service")
# Opt-in: shipped where the operator copies it from, never where systemd reads it.
HAPROXY_DROP_IN = Path("/usr/share/dbcheck/haproxy-dbcheck-state.conf")
FILES = [Path("/usr/bin/dbcheck"), Path("/usr/sbin/dbcheck-agent"), UNIT,
         Path("/usr/share/man/man1/dbcheck.1.gz"), Path("/usr/share/man/man8/dbcheck-agent.8.gz"),
         Path("/usr/share/man/man5/dbcheck.toml.5.gz"), Path("/usr/share/doc/dbcheck/README.md"),
         Path("/usr/share/doc/dbcheck/examples/postgres-patroni.cfg"),
         Path("/usr/share/doc/dbcheck/sql/healthcheck-role.sql"),
         Path("/usr/share/bash-completion/completions/dbcheck"),
         Path("/usr/share/doc/dbcheck/copyright"), Path("/usr/share/doc/dbcheck/changelog.gz"),
         Path("/usr/share/lintian/overrides/dbcheck"), HAPROXY_DROP_IN,
         Path("/usr/share/dbcheck/monitoring/dbcheck-alerts.yml"),
         Path("/usr/share/dbcheck/monitoring/dbcheck-alerts.test.yml"),
         Path("/usr/share/dbcheck/monitoring/dbcheck-dashboard.json")]
# The external check's client modules, loaded on demand (common/probe/client_modules.hpp).
MODULES = [Path("/usr/lib/dbcheck/dbcheck-pq.so"), Path("/usr/lib/dbcheck/dbcheck-curl.so"),
           Path("/usr/lib/dbcheck/dbcheck-event.so"), Path("/usr/lib/dbcheck/dbcheck-tls.so")]
FILES += MODULES


def dpkg_under_systemd(argv, workdir):
    """Run dpkg `argv` as if systemd were the init: in a private mount namespace where
    /run/systemd/system exists (invisible to the rest of the machine), with `systemctl` and
    `deb-systemd-invoke` replaced by stand-ins that log their arguments. Returns (result,
    the logged calls)."""
    fake = workdir / "fake-systemd"
    fake.mkdir(exist_ok=True)
    log = workdir / "systemd-calls.log"
    log.write_text("")
    for name in ("systemctl", "deb-systemd-invoke"):
        (fake / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n')
        (fake / name).chmod(0o755)
    # Where /run/systemd does not exist (a root without systemd running), a tmpfs over all of
    # /run stands in, in the private namespace only: nothing is created on the machine itself.
    script = ('if [ -d /run/systemd ]; then mount -t tmpfs tmpfs /run/systemd; '
              'else mount -t tmpfs tmpfs /run; fi && mkdir -p /run/systemd/system && exec "$@"')
    res = run(["unshare", "--mount", "sh", "-c", script, "sh", "dpkg", *argv],
              env={**os.environ, "PATH": f"{fake}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                   "DEBIAN_FRONTEND": "noninteractive"})
    return res, log.read_text().splitlines()


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Build the .deb from the build tree with cpack, install it with dpkg (under the systemd
    stand-in: `install_calls`), purge it after."""
    if run(["dpkg-query", "-W", "-f=${Status}", "dbcheck"], check=False).stdout.startswith("install ok"):
        pytest.fail("a dbcheck package is already installed on this machine: not touching it", pytrace=False)
    out = tmp_path_factory.mktemp("deb")
    deb = build_deb(out)
    _, calls = dpkg_under_systemd(["-i", str(deb)], out)
    try:
        yield SimpleNamespace(deb=deb, install_calls=calls, workdir=out)
    finally:
        run(["dpkg", "--purge", "dbcheck"], check=False)


def test_package_is_named_for_its_release_as_the_readme_says(installed):
    """One package per release ("0.1.0+deb12"), named as the README's install command types it
    (on Debian 13 the README's "+deb12" reads "+deb13")."""
    release = peers.release()
    version = run(["dpkg-query", "-W", "-f=${Version}", "dbcheck"]).stdout
    assert re.fullmatch(rf"\d+\.\d+\.\d+\+deb{release}", version), version
    assert installed.deb.name == f"dbcheck_{version}_amd64.deb"
    readme = (REPO / "README.md").read_text()
    assert f"apt install ./{installed.deb.name.replace(f'+deb{release}', '+deb12')}`" in readme
    with gzip.open("/usr/share/doc/dbcheck/changelog.gz", "rt") as f:
        first = f.readline()
    assert first.startswith(f"dbcheck ({version}) "), first


def test_package_installs_every_file(installed):
    listed = set(run(["dpkg", "-L", "dbcheck"]).stdout.split())
    for f in FILES:
        assert str(f) in listed and f.exists(), f
    for page in ("dbcheck", "dbcheck-agent", "dbcheck.toml"):
        assert run(["man", "-w", page]).stdout.strip().endswith(".gz"), page
    assert run(["getent", "passwd", "dbcheck"]).stdout.startswith("dbcheck:")
    version = run(["/usr/bin/dbcheck", "--version"]).stdout
    assert "libpq" in version and "hiredis" in version and "libcurl" in version \
        and "libevent" in version, version


def test_agent_unit_verifies(installed):
    text = UNIT.read_text()
    assert "ExecStart=/usr/sbin/dbcheck-agent " in text and "Type=notify" in text and "User=dbcheck" in text
    for hardening in ("NoNewPrivileges=yes", "ProtectSystem=strict", "WatchdogSec=", "UMask=0077",
                      "LimitCORE=0", "ProtectProc=invisible", "ProcSubset=pid", "IPAddressDeny=any",
                      "IPAddressAllow=localhost link-local 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 fc00::/7"):
        assert hardening in text, hardening
    # the stop outlasts the agent's drain (shutdown_grace, 10 s by default, 50 s at most)
    assert int(re.search(r"^TimeoutStopSec=(\d+)$", text, re.M).group(1)) >= 50 + 10, text
    res = run(["systemd-analyze", "verify", str(UNIT)], check=False)
    assert res.returncode == 0, res.stdout + res.stderr


def test_haproxy_drop_in_is_opt_in_verifies_and_does_nothing_unless_asked(installed, tmp_path):
    """The drop-in for haproxy.service: nothing of the package is where systemd reads drop-ins
    (installing dbcheck changes no HAProxy start); copied in place as the man page says (here
    into a unit directory of the test's, never /etc), systemd reads it and accepts the unit with
    it; and its ExecStartPre, run as systemd would with Debian's own haproxy.cfg (no
    server-state-file), exits 0 and writes nothing (the file says so on stderr)."""
    listed = run(["dpkg", "-L", "dbcheck"]).stdout.split()
    assert not [f for f in listed if "haproxy.service.d" in f], listed
    assert not [f for f in listed if f.startswith(("/etc/systemd", "/usr/lib/systemd/system/haproxy"))], \
        listed
    man = gzip.decompress(Path("/usr/share/man/man1/dbcheck.1.gz").read_bytes()).decode()
    assert str(HAPROXY_DROP_IN).replace("-", "\\-") in man, "the man page names the file to copy"

    units = tmp_path / "units"
    (units / "haproxy.service.d").mkdir(parents=True)
    shutil.copy("/usr/lib/systemd/system/haproxy.service", units / "haproxy.service")
    env = {**os.environ, "SYSTEMD_UNIT_PATH": f"{units}:"}
    verify = ["systemd-analyze", "verify", str(units / "haproxy.service")]
    drop_in = units / "haproxy.service.d" / "dbcheck-state.conf"
    # That systemd reads a drop-in there: an unknown key in it is reported.
    drop_in.write_text(HAPROXY_DROP_IN.read_text() + "NotAKey=1\n")
    res = run(verify, check=False, env=env)
    assert f"{drop_in}:" in res.stderr and "NotAKey" in res.stderr, res.stdout + res.stderr
    shutil.copy(HAPROXY_DROP_IN, drop_in)
    res = run(verify, check=False, env=env)
    assert res.returncode == 0 and "dbcheck-state.conf" not in res.stderr, res.stdout + res.stderr

    line = re.search(r"^ExecStartPre=-(.*)$", HAPROXY_DROP_IN.read_text(), re.M).group(1)
    argv = line.replace("${CONFIG}", "/etc/haproxy/haproxy.cfg").split()
    assert argv[:4] == ["/usr/sbin/runuser", "-u", "haproxy", "--"], argv
    before = set(Path("/run/haproxy").iterdir()) if Path("/run/haproxy").exists() else set()
    res = run(argv, check=False)
    assert res.returncode == 0, res.stderr
    assert "names no server-state-file: nothing written" in res.stderr, res.stderr
    after = set(Path("/run/haproxy").iterdir()) if Path("/run/haproxy").exists() else set()
    assert after == before


def test_installed_binaries_check_a_real_cluster(installed, pg_cluster, workdir):
    leader = pg_cluster.wait_healthy()
    # Run here as root: its password file is root's (dbcheck refuses another user's file).
    cfg = write_dbcheck_config(workdir / "dbcheck", pg_cluster, owner=None)
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


def test_fresh_install_starts_nothing(installed):
    """The unit needs /etc/dbcheck/dbcheck.toml first: installing only reloads systemd."""
    assert installed.install_calls == ["systemctl --system daemon-reload"], installed.install_calls


def test_lintian_finds_no_error_or_warning(installed):
    if not shutil.which("lintian"):
        pytest.fail("lintian is not installed: run ./scripts/install-deps", pytrace=False)
    res = run(["lintian", "--allow-root", "--show-overrides", str(installed.deb)], timeout=300, check=False)
    print(res.stdout + res.stderr)
    problems = [line for line in res.stdout.splitlines() if re.match(r"[EW]: ", line)]
    assert not problems and res.returncode == 0, res.stdout + res.stderr


def _hardening_skips():
    """What hardening-check must not demand here: CET's mark, which no binary linked on Debian
    12 or 13 carries (see the hardening block of CMakeLists.txt), and, where this
    hardening-check knows it (Debian 13's), branch protection, which exists only on AArch64."""
    skips = ["--nocfprotection"]
    helptext = run(["hardening-check", "--help"], check=False).stdout
    if "--nobranchprotection" in helptext and os.uname().machine != "aarch64":
        skips.append("--nobranchprotection")
    return skips


HARDENING_SKIPS = _hardening_skips() if shutil.which("hardening-check") else []


def test_hardening_check_passes_both_binaries(installed):
    if not shutil.which("hardening-check"):
        pytest.fail("hardening-check (devscripts) is not installed: run ./scripts/install-deps",
                    pytrace=False)
    res = run(["hardening-check", *HARDENING_SKIPS, "/usr/bin/dbcheck", "/usr/sbin/dbcheck-agent"],
              check=False)
    print(res.stdout + res.stderr)
    assert res.returncode == 0, res.stdout + res.stderr
    for check in ("Position Independent Executable", "Stack protected", "Fortify Source functions",
                  "Read-only relocations", "Immediate binding"):
        assert res.stdout.count(f" {check}: yes") == 2, (check, res.stdout)
    # hardening-check sees stack clash protection only in a stack-probing loop, which only some
    # code makes the compiler emit (Debian 12's GCC made one here, Debian 13's none): where it
    # cannot tell, every compilation unit of both binaries must record the flag (their DWARF
    # producer strings, in the build tree's unstripped copies of what the package ships).
    if res.stdout.count(" Stack clash protection: yes") != 2:
        for binary in (BUILD / "external-check" / "dbcheck", BUILD / "agent" / "dbcheck-agent"):
            info = run(["readelf", "--debug-dump=info", str(binary)], timeout=300).stdout
            units = re.findall(r"DW_AT_producer\s*:.*?(GNU C\+\+\S* .*)$", info, re.M)
            assert units, f"{binary}: no compilation unit with debug information"
            unprotected = [u for u in units if "-fstack-clash-protection" not in u]
            assert not unprotected, (binary, unprotected[:3])
    # The modules dbcheck loads: hardened as well (PIE does not apply to a shared object).
    res = run(["hardening-check", *HARDENING_SKIPS, *map(str, MODULES)], check=False)
    print(res.stdout + res.stderr)
    assert res.returncode == 0, res.stdout + res.stderr
    for check in ("Stack protected", "Read-only relocations", "Immediate binding"):
        assert res.stdout.count(f" {check}: yes") == len(MODULES), (check, res.stdout)


def test_upgrade_restarts_a_running_agent_without_stopping_it_first(installed, tmp_path):
    newer = build_deb(tmp_path, version=f"0.1.1+deb{peers.release()}")
    _, calls = dpkg_under_systemd(["-i", str(newer)], tmp_path)
    assert run(["dpkg-query", "-W", "-f=${Version}", "dbcheck"]).stdout == f"0.1.1+deb{peers.release()}"
    # prerm upgrade leaves the agent answering; postinst restarts it only if it runs, last
    assert not any("stop" in c or " start" in c for c in calls), calls
    assert calls[-1] == "deb-systemd-invoke try-restart dbcheck-agent.service", calls


def test_purge_stops_the_agent_removes_user_and_state_and_gives_its_files_to_root(installed, tmp_path):
    """Last: purges the package. The agent's password file (0600, the dbcheck user's) is
    kept with its mode and given to root, named in a warning; the operator's other files in
    /etc/dbcheck stay as they are; /var/lib/dbcheck-agent, the user and the group go."""
    etc, state = Path("/etc/dbcheck"), Path("/var/lib/dbcheck-agent")
    secret = etc / "test-package-agent.password"
    config = etc / "test-package.toml"
    made = [secret, config]
    try:
        secret.write_text("agent-secret\n")
        secret.chmod(0o600)
        shutil.chown(secret, "dbcheck", "dbcheck")
        config.write_text("# the operator's\n")
        state.mkdir(exist_ok=True)
        shutil.chown(state, "dbcheck", "dbcheck")
        (state / "drain").write_text("")
        res, calls = dpkg_under_systemd(["--purge", "dbcheck"], tmp_path)
        assert "deb-systemd-invoke stop dbcheck-agent.service" in calls, calls
        assert not any("start" in c for c in calls), calls
        assert run(["getent", "passwd", "dbcheck"], check=False).returncode != 0
        assert run(["getent", "group", "dbcheck"], check=False).returncode != 0
        assert not state.exists()
        st = secret.stat()
        assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (0, 0, 0o600), st
        assert f"{secret} belonged to the removed user dbcheck; now root's" in res.stderr, res.stderr
        assert config.read_text() == "# the operator's\n" and str(config) not in res.stderr
    finally:
        for f in made:
            f.unlink(missing_ok=True)
