"""A PostgreSQL replica that answers correctly, and slowly: Patroni advertises it behind a proxy
that holds each answer (lab/delay_proxy.py), as an I/O-stalled or overloaded node answers.
With max_latency below what its node step takes, the reader check takes it out (down/slow)
where Patroni's own GET /replica still answers 200; without the delay it passes. The time
judged is the node step's, which the check itself reports. The member is advertised at its own
address again before the test ends."""

import json

from lab.dbcheck import assert_in_time, explain, write_dbcheck_config
from lab.delay_proxy import DelayProxy
from lab.procs import wait_until

TIMEOUT = 2.0  # far past what the delays add up to: the verdict must be slow, not timeout
BOUNDED = """
[backend.pg_read_bounded]
cluster = "pg"
role = "replica"
max_lag = "1s"
max_latency = "200ms"
"""


def _advertise(cluster, member, addr):
    """Set `member`'s postgresql.connect_address to `addr` (its config rewritten in place, so
    owner and mode stay), reload its Patroni, and wait (bounded) until the members' view lists
    it there."""
    config = json.loads(member.config_path.read_text())
    config["postgresql"]["connect_address"] = addr
    member.config_path.write_text(json.dumps(config))
    cluster.patronictl("reload", cluster.scope, member.name, "--force")

    def listed():
        view = cluster.cluster_view() or {}
        return any(m.get("name") == member.name and f"{m.get('host')}:{m.get('port')}" == addr
                   for m in view.get("members", []))
    wait_until(listed, 30, f"{member.name} advertised at {addr}")


def _node_ms(run):
    return next(s["latency_ms"] for s in run.report["steps"] if s["opinion"] == "node")


def test_a_slow_replica_leaves_the_readers_where_patroni_keeps_it(pg_cluster, dbcheck_bin, workdir,
                                                                  figures):
    leader = pg_cluster.wait_healthy()
    replica = pg_cluster.replicas(leader)[-1]
    cfg = write_dbcheck_config(workdir, pg_cluster, owner=None, timeout=f"{TIMEOUT * 1000:.0f}ms",
                               extra=BOUNDED)
    with DelayProxy(replica.pg_addr) as proxy:
        _advertise(pg_cluster, replica, proxy.addr)
        try:
            fast = explain(dbcheck_bin, cfg, "pg_read_bounded", proxy.addr)
            assert fast.rc == 0 and fast.failure == "none", fast
            assert _node_ms(fast) < 200, fast.report["steps"]
            # Each answer held 80 ms: the connection's round trips and the query's, about
            # 0.4-0.6 s in all, past max_latency and well inside the deadline.
            proxy.delay = 0.08
            slow = explain(dbcheck_bin, cfg, "pg_read_bounded", proxy.addr)
            assert slow.rc == 1 and slow.state == "down" and slow.failure == "slow", slow
            assert slow.reason.startswith("slow: the node answered in "), slow
            assert "max_latency 200 ms (" in slow.reason, slow
            assert _node_ms(slow) > 200, slow.report["steps"]
            assert_in_time(slow, TIMEOUT)
            # Patroni's own check keeps it: the replica runs and streams.
            status, _ = pg_cluster.rest(replica, "/replica", timeout=2.0)
            assert status == 200
        finally:
            proxy.delay = 0
            _advertise(pg_cluster, replica, replica.pg_addr)
    pg_cluster.wait_healthy()
    figures("postgres slow replica (max_latency 200 ms)",
            f"node step {_node_ms(slow):.0f} ms behind an 80 ms-per-answer proxy: DOWN/slow "
            f"(Patroni GET /replica 200); without the delay {_node_ms(fast):.1f} ms: UP")
