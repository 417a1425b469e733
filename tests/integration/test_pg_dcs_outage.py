"""etcd down under the session's Patroni cluster: with failsafe_mode on, Patroni keeps its leader
(every member accepted it) and so does dbcheck's writer check, which tells the node's own
Patroni by the configured URL on its host (lab/dcs.urls_naming); without that URL it fails
closed. With failsafe off, Patroni demotes the leader once retry_timeout passes, and dbcheck
follows. Either way the node is still asked: a replica is never the writer. Readers are
measured against the leader Patroni keeps (its GET /primary's WAL position), and fail closed
once none is kept. etcd is restarted and the cluster healed before the test ends."""

from lab import dcs, faults
from lab.dbcheck import assert_in_time, explain, write_dbcheck_config
from lab.procs import wait_until

TIMEOUT = 0.8


def _rest_or_none(cluster, member, path):
    """(status, body) of a REST call, or (None, None) when it does not answer in time."""
    try:
        return cluster.rest(member, path, timeout=2.0)
    except OSError:
        return None, None


def _heal(cluster):
    """etcd back, the cluster healthy again, failsafe off."""
    faults.start_etcd(cluster)
    cluster.wait_healthy(120)
    dcs.set_failsafe(cluster, False)


def test_etcd_down_failsafe_keeps_the_writer_as_patroni_does(workdir, pg_cluster,
                                                             dbcheck_bin, figures):
    leader = pg_cluster.member(pg_cluster.wait_healthy().name)
    replica = pg_cluster.replicas(leader)[0]
    cfg = write_dbcheck_config(workdir / "dbcheck", pg_cluster, owner=None,
                               patroni_urls=dcs.urls_naming(pg_cluster, leader))
    loopback = write_dbcheck_config(workdir / "loopback", pg_cluster, owner=None)
    replica_cfg = write_dbcheck_config(workdir / "replica", pg_cluster, owner=None,
                                       patroni_urls=dcs.urls_naming(pg_cluster, replica))
    dcs.set_failsafe(pg_cluster, True)
    faults.stop_etcd(pg_cluster)
    try:
        dcs.wait_failsafe_active(pg_cluster, leader, 60)
        status, _ = _rest_or_none(pg_cluster, leader, "/primary")
        assert status == 200  # Patroni's own check keeps it
        run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
        assert run.rc == 0, run
        assert "Patroni keeps this node leader without its DCS" in run.reason, run
        assert "failsafe mode is active" in run.reason, run
        assert_in_time(run, TIMEOUT)
        other = explain(dbcheck_bin, cfg, "pg_write", replica.pg_addr)
        assert other.rc == 1 and other.failure == "role", other
        assert_in_time(other, TIMEOUT)
        # Every URL on the one host: nothing ties the leader's Patroni to the node; fail closed.
        unknown = explain(dbcheck_bin, loopback, "pg_write", leader.pg_addr)
        assert unknown.rc == 1, unknown
        assert "which member this node is cannot be told" in unknown.reason, unknown
        # Patroni's GET /replica keeps running replicas; dbcheck measures them against the kept
        # leader's position in its own GET /primary, told by the replica's own Patroni ...
        read = explain(dbcheck_bin, replica_cfg, "pg_read", replica.pg_addr)
        assert read.rc == 0, read
        assert "no member gives its view of the cluster" in read.reason, read
        assert "kept leader's WAL position" in read.reason, read
        assert_in_time(read, TIMEOUT)
        # ... not when nothing tells which member the node is (every URL on one host) ...
        read_lo = explain(dbcheck_bin, loopback, "pg_read", replica.pg_addr)
        assert read_lo.rc == 1, read_lo
        assert "which member this node is cannot be told" in read_lo.reason, read_lo
        assert_in_time(read_lo, TIMEOUT)
        # ... and the leader is no reader.
        lead_read = explain(dbcheck_bin, loopback, "pg_read", leader.pg_addr)
        assert lead_read.rc == 1 and lead_read.failure == "role", lead_read
        figures("etcd down, failsafe on", f"leader UP in {run.report['elapsed_ms']:.0f} ms; "
                f"replica DOWN {other.failure}: {other.reason[:100]}; as a reader UP in "
                f"{read.report['elapsed_ms']:.0f} ms: {read.reason[:160]}")
    finally:
        _heal(pg_cluster)


def test_etcd_down_without_failsafe_follows_patroni_demoting(workdir, pg_cluster, dbcheck_bin,
                                                             figures):
    leader = pg_cluster.member(pg_cluster.wait_healthy().name)
    replica = pg_cluster.replicas(leader)[0]
    cfg = write_dbcheck_config(workdir / "dbcheck", pg_cluster, owner=None)
    faults.stop_etcd(pg_cluster)
    try:
        wait_until(lambda: _rest_or_none(pg_cluster, leader, "/primary")[0] == 503, 60,
                   f"{leader.name}'s Patroni demoting it (GET /primary 503)")
        run = explain(dbcheck_bin, cfg, "pg_write", leader.pg_addr)
        assert run.rc == 1 and run.failure == "role", run
        assert_in_time(run, TIMEOUT)
        # No leader left to measure a replica against: readers fail closed.
        read = explain(dbcheck_bin, cfg, "pg_read", replica.pg_addr)
        assert read.rc == 1, read
        assert "no member's Patroni keeps a leader" in read.reason, read
        assert_in_time(read, TIMEOUT)
        figures("etcd down, failsafe off", f"old leader DOWN {run.failure} after Patroni demoted "
                f"it: {run.reason[:140]}")
    finally:
        _heal(pg_cluster)
