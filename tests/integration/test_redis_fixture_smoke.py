"""Smoke test of the Redis fixtures themselves: 2 data nodes + 3 Sentinels up, the
shipped health-check ACLs proven (allowed and denied commands), HAProxy from the
shipped Redis example, a SENTINEL FAILOVER, and nothing of ours left running
afterwards. Uses its own cluster (not the session-wide redis_cluster) so it can check
the shutdown and leave the shared one untouched."""

import os
import stat
import subprocess
import time
import tomllib

import pytest

from lab import peers
from lab.dbcheck import write_redis_config
from lab.haproxy import HAPROXY, REDIS_EXAMPLE_CFG, HAProxy, render_redis_example_for
from lab.procs import pid_alive, processes_matching, wait_until
from lab.redis import ADMIN_PASSWORD, HC_PASSWORD, HC_USER, MASTER_NAME, RedisError, \
    RedisSentinelCluster, pairs, redis_pipeline
from lab.sampler import Sampler


def served_by(port, *command):
    """Send INFO server + `command` through 127.0.0.1:port as admin; returns
    (tcp_port of the Redis that answered, reply to `command`)."""
    info, reply = redis_pipeline(port, [("INFO", "server"), command], user="default", password=ADMIN_PASSWORD)
    tcp_port = next(int(line.split(":")[1]) for line in info.splitlines() if line.startswith("tcp_port:"))
    return tcp_port, reply


def test_shipped_redis_example_passes_haproxy_check():
    res = subprocess.run([HAPROXY, "-c", "-f", str(REDIS_EXAMPLE_CFG)], capture_output=True, text=True,
                         timeout=30)
    assert res.returncode == 0, res.stdout + res.stderr


def test_redis_fixture_smoke(servers_installed, workdir, figures):
    cluster = RedisSentinelCluster(workdir / "redis")
    haproxy = None
    pids = []
    timings = {}
    try:
        cluster.start()
        timings["up"] = cluster.up_seconds
        redis1, redis2 = cluster.nodes()
        s1, s2, s3 = cluster.sentinels()

        # every node and Sentinel runs the chosen server (Redis or Valkey, as lab/peers.py chose)
        field, version = peers.redis_version_field()
        for x in (redis1, redis2, s1, s2, s3):
            ask = cluster.admin if x.kind == "node" else cluster.sentinel_admin
            info = dict(line.split(":", 1) for line in ask(x, "INFO", "server").splitlines() if ":" in line)
            assert info.get(field, "").startswith(version), (x.name, field, info.get(field))

        # topology: redis1 master, redis2 its connected replica, all Sentinels agree
        assert cluster.master() == redis1
        assert cluster.role(redis1) == ("master",)
        assert cluster.role(redis2) == ("slave", "127.0.0.1", redis1.port, "connected")
        assert cluster.sentinel_masters() == {s.name: redis1.addr for s in cluster.sentinels()}
        assert cluster.wait_stable(5) == redis1
        assert cluster.admin(redis1, "SET", "smoke", "1") == "OK"

        # ACL on the data nodes (docs/redis/data-node-acl.conf): PING, ROLE and the write probe
        for n in (redis1, redis2):
            assert cluster.hc(n, "PING") == "PONG"
            assert cluster.hc(n, "ROLE")[0] in ("master", "slave")
        for cmd in (("SET", "smoke", "2"), ("GET", "smoke"), ("CONFIG", "GET", "maxmemory"),
                    ("LPUSHX", "smoke", "2")):
            with pytest.raises(RedisError, match="^NOPERM"):
                cluster.hc(redis1, *cmd)
        assert cluster.hc(redis1, "LPUSHX", "dbcheck:write-probe", "1") == 0  # the write probe
        with pytest.raises(RedisError, match="^WRONGPASS"):
            cluster.command(redis1, "PING", user=HC_USER, password="not-" + HC_PASSWORD)

        # ACL on the Sentinels (docs/redis/sentinel-acl.conf): read-only SENTINEL subcommands
        for s in cluster.sentinels():
            assert (cluster.hc(s, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
                    == ["127.0.0.1", str(redis1.port)])
            info = pairs(cluster.hc(s, "SENTINEL", "MASTER", MASTER_NAME))
            assert (info["ip"], info["port"], info["flags"]) == ("127.0.0.1", str(redis1.port), "master")
        for cmd in (("SENTINEL", "FAILOVER", MASTER_NAME), ("SENTINEL", "SET", MASTER_NAME, "quorum", "3")):
            with pytest.raises(RedisError, match="^NOPERM"):
                cluster.hc(s1, *cmd)

        # dbcheck config for this cluster: the format the parser accepts, 0600 password files
        cfg = write_redis_config(workdir / "dbcheck", cluster)
        parsed = tomllib.loads(cfg.read_text())
        assert parsed["cluster"]["cache"]["sentinels"] == [s.addr for s in cluster.sentinels()]
        assert parsed["backend"]["redis_read"] == {"cluster": "cache", "role": "replica", "max_lag": "2s"}
        for key in ("password_file", "sentinel_password_file"):
            st = os.stat(parsed["cluster"]["cache"][key])
            assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid != 0

        # HAProxy from the shipped example (check: /bin/true, so both servers are UP):
        # balance first sends writes to redis1; reads reach a data node.
        cfg_text, ports = render_redis_example_for(cluster, "/bin/true", workdir / "haproxy.sock")
        assert "10.0.0." not in cfg_text.split("\nglobal", 1)[1]  # only loopback targets
        haproxy = HAProxy(workdir / "haproxy", cfg_text).start()
        for backend in ("redis_write", "redis_read"):
            assert haproxy.wait_until_checked(backend) == ["redis1", "redis2"]
        with Sampler(haproxy, "redis_write") as sampler:
            wait_until(lambda: len(sampler.samples) >= 5, 5, "5 HAProxy samples")
        assert sampler.max_up() == 2 and not sampler.errors
        assert served_by(ports["redis_write"], "SET", "via-haproxy", "1") == (redis1.port, "OK")
        assert served_by(ports["redis_read"], "PING")[1] == "PONG"

        # a SIGSTOPped Sentinel answers nothing (bounded), the other two still make a majority
        cluster.sigstop(s3)
        t0 = time.monotonic()
        assert cluster.sentinel_masters(timeout=0.5)[s3.name] is None
        assert time.monotonic() - t0 < 5  # bounded (0.5 s per Sentinel), never hanging
        assert cluster.master() == redis1
        cluster.sigcont(s3)
        # a stopped Sentinel comes back with its (rewritten) config file
        old_pid = cluster.pid(s2)
        cluster.stop_sentinel(s2)
        assert not pid_alive(old_pid) and cluster.pid(s2) is None
        assert cluster.master() == redis1
        assert cluster.start_sentinel(s2) != old_pid
        wait_until(lambda: cluster.sentinel_masters()[s2.name] == redis1.addr, 10,
                   "sentinel2 naming redis1 again")

        # SENTINEL FAILOVER moves the master; wait_stable returns the new one
        t0 = time.monotonic()
        new = cluster.failover()
        timings["sentinel switch"] = time.monotonic() - t0
        assert new == redis2
        assert cluster.wait_stable(60, not_master=redis1) == redis2
        timings["failover stable"] = time.monotonic() - t0
        assert cluster.master() == redis2
        assert cluster.role(redis1) == ("slave", "127.0.0.1", redis2.port, "connected")
        assert cluster.admin(redis2, "GET", "smoke") == "1"  # replicated before the failover
        with pytest.raises(RedisError, match="^READONLY"):
            cluster.admin(redis1, "SET", "smoke", "3")

        pids = [haproxy.pid, *cluster.all_pids()]
        assert len(pids) == 1 + 2 + 3 + 1  # haproxy, 2 nodes, 3 Sentinels, sentinel2 restarted
    finally:
        t0 = time.monotonic()
        if haproxy:
            haproxy.stop()
        cluster.stop()
        timings["down"] = time.monotonic() - t0

    assert [p for p in pids if pid_alive(p)] == []
    assert processes_matching(str(workdir)) == []
    figures("redis fixture", ", ".join(f"{k} {v:.1f}s" for k, v in timings.items()))
