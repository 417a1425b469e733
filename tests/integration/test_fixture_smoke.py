"""Smoke test of the fixtures themselves: a whole cluster + HAProxy up and down, and
nothing of ours left running afterwards. Uses its own cluster (not the session-wide
pg_cluster) so it can check the shutdown."""

import time

import psycopg2

from lab import peers
from lab.haproxy import HAProxy, render_example_for
from lab.heartbeat import Heartbeat
from lab.patroni import HC_PASSWORD, HC_USER, PatroniCluster
from lab.procs import pid_alive, processes_matching, wait_until
from lab.sampler import Sampler


def test_fixture_smoke(servers_installed, workdir):
    cluster = PatroniCluster(workdir / "pg")
    haproxy = None
    pids = []
    try:
        cluster.start()
        print(f"cluster up in {cluster.up_seconds:.1f}s")
        names = [m.name for m in cluster.members()]

        # one leader, the others streaming from it; every member runs the chosen Patroni
        leader = cluster.leader()
        assert leader is not None
        for m in cluster.members():
            assert cluster.rest(m, "/patroni")[1]["patroni"]["version"] == peers.patroni_version()
        replicas = [m for m in cluster.members() if m != leader]
        assert cluster.streaming_replicas(leader) == sorted(m.name for m in replicas)
        with cluster.superuser_conn(leader) as conn, conn.cursor() as cur:
            # the shipped least role: no predefined role (docs/sql/healthcheck-role.sql)
            cur.execute("SELECT pg_is_in_recovery(), rolsuper, "
                        "pg_has_role('healthcheck', 'pg_read_all_stats', 'usage') "
                        "FROM pg_roles WHERE rolname = 'healthcheck'")
            assert cur.fetchone() == (False, False, False)
        conn.close()

        # heartbeat written on the leader becomes visible on every replica
        with Heartbeat(cluster) as hb:
            for r in replicas:
                staleness = wait_until(
                    lambda r=r: (s := hb.true_staleness(r)) is not None and s < 1.0 and [s],
                    15,
                    f"a fresh heartbeat on {r.name}",
                )[0]
                print(f"{r.name}: staleness {staleness:.3f}s")
        assert hb.writes and {name for _, name in hb.writes} == {leader.name}

        # HAProxy from the shipped example, with /bin/true as the check
        cfg, ports = render_example_for(cluster, "/bin/true", workdir / "haproxy.sock")
        assert "10.0.0." not in cfg.split("\nglobal", 1)[1]  # only loopback targets
        haproxy = HAProxy(workdir / "haproxy", cfg).start()
        for backend in ("pg_write", "pg_read"):
            assert haproxy.wait_until_checked(backend) == names
        with Sampler(haproxy, "pg_write") as sampler:
            wait_until(lambda: len(sampler.samples) >= 5, 5, "5 HAProxy samples")
        assert sampler.max_up() == 3 and not sampler.errors

        # a query through the read frontend reaches PostgreSQL
        conn = psycopg2.connect(host="127.0.0.1", port=ports["pg_read"], user=HC_USER,
                                password=HC_PASSWORD, dbname="appdb", connect_timeout=2)
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)
        conn.close()

        pids = [haproxy.pid, *cluster.all_pids()]
        assert len(pids) == 1 + 1 + 3 + 3  # haproxy, etcd, 3 Patroni, 3 postmasters
    finally:
        t0 = time.monotonic()
        if haproxy:
            haproxy.stop()
        cluster.stop()
        print(f"everything down in {time.monotonic() - t0:.1f}s (cluster {cluster.down_seconds:.1f}s)")

    assert [p for p in pids if pid_alive(p)] == []
    assert processes_matching(str(workdir)) == []
    assert processes_matching(cluster.scope) == []  # postgres children carry cluster_name
