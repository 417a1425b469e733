"""`dbcheck config-check --haproxy-config FILE [--live]` on real files: every shipped HAProxy
example agrees with its dbcheck example; a copy with a misnamed backend and a `timeout` not
below HAProxy's kill time reports both, each with file:line of both files; --live checks every
server of a real Patroni cluster once and prints the verdicts."""

import re
import subprocess
from pathlib import Path

import pytest

from lab.dbcheck import write_dbcheck_config
from lab.haproxy import EXAMPLE_SERVERS, render_example
from lab.ports import free_ports

EXAMPLES = Path(__file__).resolve().parents[2] / "haproxy-examples"
# Each shipped HAProxy example and the dbcheck.toml example it goes with.
PAIRS = {
    "postgres-patroni.cfg": "dbcheck.toml",
    "postgres-patroni-agent.cfg": "dbcheck-agent.toml",
    "redis-sentinel.cfg": "dbcheck-redis.toml",
    "redis-sentinel-agent.cfg": "dbcheck-redis.toml",
    "combined.cfg": "dbcheck-combined.toml",
}


def local_toml(example, directory):
    """The example TOML at <directory>/<name>, its password files moved to real 0600 files
    (config-check reads them), every other line where it was."""
    text = (EXAMPLES / example).read_text()
    for i, path in enumerate(sorted(set(re.findall(r'"(/etc/dbcheck/[^"]+\.password)"', text)))):
        local = directory / f"secret{i}.password"
        local.write_text("example-secret\n")
        local.chmod(0o600)
        text = text.replace(f'"{path}"', f'"{local}"')
    out = directory / example
    out.write_text(text)
    return out


def config_check(dbcheck_bin, toml, cfg, *more):
    return subprocess.run([str(dbcheck_bin), "--config", str(toml), "config-check", "--haproxy-config",
                           str(cfg), *more], capture_output=True, text=True, timeout=30)


def line_of(path, text):
    """The 1-based number of the only line of `path` that starts with `text` (blanks aside)."""
    hits = [i for i, line in enumerate(Path(path).read_text().split("\n"), 1)
            if line.strip().startswith(text)]
    assert len(hits) == 1, (path, text, hits)
    return hits[0]


def test_every_shipped_example_has_its_pair():
    assert sorted(PAIRS) == sorted(p.name for p in EXAMPLES.glob("*.cfg"))


@pytest.mark.parametrize("cfg", sorted(PAIRS))
def test_shipped_examples_are_consistent(dbcheck_bin, workdir, cfg):
    res = config_check(dbcheck_bin, local_toml(PAIRS[cfg], workdir), EXAMPLES / cfg)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert f"{EXAMPLES / cfg}: consistent with " in res.stdout, out
    assert "example-secret" not in out


def test_misnamed_backend_and_long_timeout_are_both_reported(dbcheck_bin, workdir):
    toml = local_toml("dbcheck.toml", workdir)
    toml.write_text(toml.read_text().replace('timeout = "800ms"', 'timeout = "1s"', 1))
    cfg = workdir / "haproxy.cfg"
    cfg.write_text((EXAMPLES / "postgres-patroni.cfg").read_text().replace("pg_write", "pg_wirte"))
    res = config_check(dbcheck_bin, toml, cfg)
    out = res.stdout + res.stderr
    assert res.returncode == 2, out
    misnamed = line_of(cfg, "backend pg_wirte")
    declared = line_of(toml, "[backend.pg_write]")
    lines = cfg.read_text().split("\n")
    command = next(i for i, line in enumerate(lines, 1) if i > misnamed and "external-check command" in line)
    assert (f"{cfg}:{misnamed}: backend pg_wirte runs dbcheck (external-check command /usr/bin/dbcheck, "
            f"line {command}) but {toml} has no [backend.pg_wirte] (did you mean pg_write, "
            f"{toml}:{declared}?)") in res.stdout, out
    assert (f"{toml}:{declared}: [backend.pg_write] is used by no HAProxy backend in {cfg} "
            f"(did you mean pg_wirte, {cfg}:{misnamed}?)") in res.stdout, out
    # pg_read's kill time: inter 1s from its default-server line (timeout connect 1s is not
    # shorter); pg_wirte is not compared (it has no [backend.NAME]).
    reader = line_of(cfg, "default-server inter 1s fall 2 rise 2")
    timeout = line_of(toml, 'timeout = "1s"')
    assert (f"{cfg}:{reader}: backend pg_read: HAProxy kills the check after 1s (min(inter 1s, "
            f"timeout connect 1s), as `timeout check` is set at {cfg}:{line_of(cfg, 'timeout check 1s')}) "
            f"but dbcheck's timeout is 1s ({toml}:{timeout})") in res.stdout, out
    assert f"{cfg}: 3 mismatch(es) with {toml}" in res.stdout, out


def test_without_haproxy_config_only_the_toml_is_checked(dbcheck_bin, workdir):
    toml = local_toml("dbcheck.toml", workdir)
    res = subprocess.run([str(dbcheck_bin), "--config", str(toml), "config-check", "--live"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 64 and "--haproxy-config" in res.stderr, res.stdout + res.stderr
    res = subprocess.run([str(dbcheck_bin), "--config", str(toml), "config-check"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0 and "consistent" not in res.stdout, res.stdout + res.stderr


def test_live_checks_every_server_once(pg_cluster, dbcheck_bin, workdir):
    leader = pg_cluster.wait_healthy()
    toml = write_dbcheck_config(workdir / "dbcheck", pg_cluster, owner=None)
    members = pg_cluster.members()
    servers = dict(zip(EXAMPLE_SERVERS, [m.pg_addr for m in members]))
    ports = dict(zip([5000, 5001], free_ports(2)))
    cfg = workdir / "haproxy.cfg"
    cfg.write_text(render_example(EXAMPLES / "postgres-patroni.cfg", servers, ports, dbcheck_bin,
                                  workdir / "admin.sock"))
    res = config_check(dbcheck_bin, toml, cfg, "--live")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    rows = {}
    for line in res.stdout.split("\n"):
        words = line.split()
        if len(words) >= 5 and words[0] in ("pg_write", "pg_read"):
            rows[(words[0], words[2])] = words[4]
    # Every server of both backends, once; the leader the one writer, the replicas readers
    # (a replica may lag for a moment: only the writer column is exact).
    assert sorted(rows) == sorted((b, m.pg_addr) for b in ("pg_write", "pg_read") for m in members), out
    for m in members:
        assert rows[("pg_write", m.pg_addr)] == ("UP" if m == leader else "DOWN"), out
    assert rows[("pg_read", leader.pg_addr)] == "DOWN", out
    assert "pg_write: 1 of 3 servers pass as writer\n" in res.stdout, out
