"""Every shipped example is valid as shipped (haproxy -c; dbcheck config-check), and the
combined one routes all four backends of a real Patroni cluster and a real Redis+Sentinel
set. (The single-engine examples are exercised by test_pg_routing, test_redis_routing and
test_agent_*.)"""

import re
import subprocess
import time
from pathlib import Path

import pytest

from lab.dbcheck import write_check_wrapper, write_dbcheck_config, write_redis_config
from lab.haproxy import EXAMPLE_SERVERS, HAPROXY, REDIS_EXAMPLE_SERVERS, render_example
from lab.ports import free_ports
from lab.procs import wait_until
from lab.sampler import Sampler

EXAMPLES = Path(__file__).resolve().parents[2] / "haproxy-examples"
COMBINED_PORTS = {5000: "pg_write", 5001: "pg_read", 6380: "redis_write", 6381: "redis_read"}


@pytest.mark.parametrize("cfg", sorted(p.name for p in EXAMPLES.glob("*.cfg")))
def test_haproxy_accepts_the_example_as_shipped(cfg):
    res = subprocess.run([HAPROXY, "-c", "-f", str(EXAMPLES / cfg)], capture_output=True, text=True,
                         timeout=30)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("toml", sorted(p.name for p in EXAMPLES.glob("*.toml")))
def test_dbcheck_accepts_the_example_config(dbcheck_bin, workdir, toml):
    """The example TOML, with only its password file paths moved to real 0600 files."""
    text = (EXAMPLES / toml).read_text()
    paths = sorted(set(re.findall(r'"(/etc/dbcheck/[^"]+\.password)"', text)))
    assert paths, "every example names at least one password file"
    for i, path in enumerate(paths):
        local = workdir / f"secret{i}.password"
        local.write_text("example-secret\n")
        local.chmod(0o600)
        text = text.replace(f'"{path}"', f'"{local}"')
    cfg = workdir / toml
    cfg.write_text(text)
    res = subprocess.run([str(dbcheck_bin), "--config", str(cfg), "config-check"], capture_output=True,
                         text=True, timeout=10)
    assert res.returncode == 0 and ": OK," in res.stdout, res.stdout + res.stderr
    assert "example-secret" not in res.stdout + res.stderr


def combined_dbcheck_config(directory, pg_cluster, redis_cluster):
    """One dbcheck.toml for both clusters (as dbcheck-combined.toml): the fixtures' two
    configs, the second without its [defaults]."""
    pg = write_dbcheck_config(directory / "pg", pg_cluster).read_text()
    redis = write_redis_config(directory / "redis", redis_cluster).read_text()
    redis = redis.split("\n[cluster.", 1)[1]
    cfg = directory / "dbcheck.toml"
    cfg.write_text(pg + "\n[cluster." + redis)
    cfg.chmod(0o644)
    return cfg


def test_combined_example_routes_both_engines(pg_cluster, redis_cluster, dbcheck_bin, haproxy_factory,
                                              workdir, figures):
    leader = pg_cluster.wait_healthy()
    master = redis_cluster.wait_stable()
    config = combined_dbcheck_config(workdir / "dbcheck", pg_cluster, redis_cluster)
    wrapper = write_check_wrapper(workdir / "dbcheck" / "dbcheck-wrapper", dbcheck_bin, config)
    servers = dict(zip(EXAMPLE_SERVERS, [m.pg_addr for m in pg_cluster.members()]))
    servers.update(zip(REDIS_EXAMPLE_SERVERS, [n.addr for n in redis_cluster.nodes()]))
    # The Redis example addresses 10.0.0.1:6379 share their host with 10.0.0.1:5432: replace
    # the full host:port tokens only (render_example does), never a bare host.
    ports = dict(zip(COMBINED_PORTS, free_ports(len(COMBINED_PORTS))))
    text = render_example(EXAMPLES / "combined.cfg", servers, ports, wrapper,
                          workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(text)
    want = {
        "pg_write": [leader.name],
        "pg_read": sorted(m.name for m in pg_cluster.members() if m != leader),
        "redis_write": [master.name],
        "redis_read": [n.name for n in redis_cluster.nodes() if n != master],
    }
    t0 = time.monotonic()
    for backend, names in want.items():
        hap.wait_until_checked(backend)
        wait_until(lambda b=backend, n=names: sorted(hap.servers_up(b)) == n, 30, f"{backend}: {names} UP")
    with Sampler(hap, "pg_write") as s_pg, Sampler(hap, "redis_write") as s_redis:
        time.sleep(2)
    assert s_pg.samples and all(up == (leader.name,) for _, up in s_pg.samples), s_pg.transitions()
    assert s_redis.samples and all(up == (master.name,) for _, up in s_redis.samples), s_redis.transitions()
    figures("combined example", f"{want} routed {time.monotonic() - t0:.1f}s after start")
