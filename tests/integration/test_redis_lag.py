"""Redis replica lag in seconds on a real Redis 7 pair under Sentinel: write silence, load
against ground truth, a cut link, a frozen master, a full sync."""

import subprocess
import time

import pytest

from fixtures.dbcheck import explain, write_redis_config
from fixtures.periodic import Periodic
from fixtures.procs import wait_until
from fixtures.redis import ADMIN_PASSWORD, RedisError

MAX_LAG = 1.0
TIMEOUT = 0.8
MARGIN = 0.1


@pytest.fixture
def lag_config(workdir, redis_cluster):
    return write_redis_config(workdir / "dbcheck", redis_cluster, owner=None, max_lag=f"{MAX_LAG:g}s")


@pytest.fixture
def pair(redis_cluster):
    """(master, replica) of a settled cluster."""
    master = redis_cluster.wait_stable()
    return master, next(n for n in redis_cluster.nodes() if n != master)


class RedisHeartbeat(Periodic):
    """SET dbcheck:hb <unix time> on the master every 100 ms (ground truth for staleness)."""

    def __init__(self, cluster, master):
        super().__init__("redis-heartbeat", 0.1)
        self.cluster, self.master, self.errors = cluster, master, []

    def tick(self):
        try:
            self.cluster.admin(self.master, "SET", "dbcheck:hb", repr(time.time()), timeout=0.5)
        except (OSError, RedisError) as e:
            self.errors.append(str(e))

    def true_staleness(self, replica):
        """Seconds since the heartbeat the replica holds was written (None before the first)."""
        v = self.cluster.admin(replica, "GET", "dbcheck:hb", timeout=0.5)
        return None if v is None else time.time() - float(v)


def test_idle_master_keeps_the_replica_in(redis_cluster, dbcheck_bin, lag_config, pair, figures):
    _, replica = pair
    t0 = time.monotonic()
    runs = []
    while time.monotonic() - t0 < 60:
        runs.append(explain(dbcheck_bin, lag_config, "redis_read", replica.addr))
        time.sleep(3)
    bad = [r for r in runs if r.rc != 0 or r.lag is None or r.lag >= 1.0]
    assert not bad, bad
    figures("redis idle master (60 s)", f"lag {min(r.lag for r in runs):.3f}-{max(r.lag for r in runs):.3f}s, "
            f"all {len(runs)} checks pass")


def test_lag_under_load_is_honest(redis_cluster, dbcheck_bin, lag_config, pair, figures):
    master, replica = pair
    with RedisHeartbeat(redis_cluster, master) as hb:
        wait_until(lambda: hb.true_staleness(replica) is not None, 10, "heartbeat on the replica")
        load = subprocess.Popen(["redis-benchmark", "-h", "127.0.0.1", "-p", str(master.port), "--user", "default",
                                 "-a", ADMIN_PASSWORD, "-t", "set,lpush", "-n", "400000", "-P", "16", "-q",
                                 "-d", "256", "-r", "100000"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pairs = []
        try:
            t0 = time.monotonic()
            while time.monotonic() - t0 < 5 and load.poll() is None:
                run = explain(dbcheck_bin, lag_config, "redis_read", replica.addr)
                pairs.append((run, hb.true_staleness(replica)))
                time.sleep(0.1)
        finally:
            load.terminate()
            load.wait(10)
    assert len(pairs) >= 5, "the load ended before it could be measured"
    for run, truth in pairs:
        assert run.seconds <= TIMEOUT + MARGIN, run
        if run.lag is not None:
            assert run.lag >= truth - 0.2, (run, truth)
            assert run.lag <= truth + 1.0, (run, truth)
    passed = sum(1 for r, _ in pairs if r.rc == 0)
    assert passed >= 0.9 * len(pairs), [r for r, _ in pairs if r.rc != 0]
    rep = [r.lag for r, _ in pairs if r.lag is not None]
    figures("redis lag under load", f"{passed}/{len(pairs)} pass; reported {min(rep):.3f}-{max(rep):.3f}s vs "
            f"true {min(t for _, t in pairs):.3f}-{max(t for _, t in pairs):.3f}s (heartbeat every 100 ms)")


def test_cut_link_and_frozen_master_take_the_replica_out(redis_cluster, dbcheck_bin, lag_config, pair, figures):
    master, replica = pair
    # The link cut: the replica pointed at a port where nothing listens.
    redis_cluster.admin(replica, "REPLICAOF", "127.0.0.1", "1")
    try:
        t0 = time.monotonic()
        cut = explain(dbcheck_bin, lag_config, "redis_read", replica.addr)
        t_cut = time.monotonic() - t0
    finally:
        redis_cluster.admin(replica, "REPLICAOF", "127.0.0.1", str(master.port))
    assert cut.rc == 1 and cut.failure in ("not_ready", "role"), cut
    wait_until(lambda: explain(dbcheck_bin, lag_config, "redis_read", replica.addr).rc == 0, 20,
               "the replica passes again once relinked")
    # The master frozen for less than Sentinel's down-after (no failover): the replica's link
    # still says connected, but nothing can vouch for its freshness.
    redis_cluster.sigstop(master)
    try:
        t0 = time.monotonic()
        frozen = explain(dbcheck_bin, lag_config, "redis_read", replica.addr)
        t_frozen = time.monotonic() - t0
    finally:
        redis_cluster.sigcont(master)
    assert frozen.rc == 1 and frozen.failure == "lag", frozen
    assert "master" in frozen.report["lag"]["derivation"], frozen
    assert frozen.seconds <= TIMEOUT + MARGIN, frozen
    wait_until(lambda: explain(dbcheck_bin, lag_config, "redis_read", replica.addr).rc == 0, 20,
               "the replica passes again once the master answers")
    figures("redis link cut / frozen master", f"REPLICAOF to a dead port: out at the first check "
            f"({t_cut * 1000:.0f} ms, {cut.reason}); master SIGSTOPped: out at the first check "
            f"({t_frozen * 1000:.0f} ms, {frozen.reason[:100]})")


def test_full_sync_is_not_ready(redis_cluster, dbcheck_bin, lag_config, pair):
    master, replica = pair
    # Diskless sync waits this long for more replicas before streaming: a window to observe.
    redis_cluster.admin(master, "CONFIG", "SET", "repl-diskless-sync-delay", "4")
    try:
        redis_cluster.admin(replica, "REPLICAOF", "NO", "ONE")
        redis_cluster.admin(replica, "REPLICAOF", "127.0.0.1", str(master.port))
        wait_until(lambda: redis_cluster.role(replica)[3] == "sync", 5, "the replica in full sync")
        run = explain(dbcheck_bin, lag_config, "redis_read", replica.addr)
    finally:
        redis_cluster.admin(master, "CONFIG", "SET", "repl-diskless-sync-delay", "0")
    assert run.rc == 1 and run.failure == "not_ready", run
    assert "full sync" in run.reason, run
    wait_until(lambda: explain(dbcheck_bin, lag_config, "redis_read", replica.addr).rc == 0, 20,
               "the replica passes once the sync is done")
    redis_cluster.wait_stable(timeout=30)
