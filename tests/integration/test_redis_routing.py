"""HAProxy 2.6 loading haproxy-examples/redis-sentinel.cfg with dbcheck as its external check,
in front of a real Redis 7 pair and three Sentinels: steady state, planned and unplanned
failover."""

import time

from lab.haproxy import render_redis_example_for
from lab.periodic import Periodic
from lab.procs import wait_until
from lab.sampler import Sampler

ROUTING_TIMEOUT = 30  # rise x inter plus ample slack for a loaded machine


class RoleWatcher(Periodic):
    """Records (time.monotonic(), ROLE tuple or None) of one data node every 100 ms."""

    def __init__(self, cluster, node):
        super().__init__(f"role-{node.name}", 0.1)
        self.cluster, self.node, self.samples = cluster, node, []

    def tick(self):
        try:
            role = self.cluster.role(self.node, timeout=0.3)
        except OSError:
            role = None
        self.samples.append((time.monotonic(), role))

    def first(self, predicate, since):
        """Time of the first sample at/after `since` whose role satisfies `predicate`, or None."""
        return next((t for t, r in self.samples if t >= since and r and predicate(r)), None)


def start_haproxy(redis_cluster, redis_dbcheck_setup, haproxy_factory, workdir):
    cfg, ports = render_redis_example_for(redis_cluster, redis_dbcheck_setup.wrapper,
                                          workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(cfg)
    hap.wait_until_checked("redis_write")
    hap.wait_until_checked("redis_read")
    return hap, ports


def test_steady_state(redis_cluster, redis_dbcheck_setup, haproxy_factory, workdir, figures):
    master = redis_cluster.wait_stable()
    replica = next(n for n in redis_cluster.nodes() if n != master)
    hap, _ = start_haproxy(redis_cluster, redis_dbcheck_setup, haproxy_factory, workdir)
    wait_until(lambda: hap.servers_up("redis_write") == [master.name], ROUTING_TIMEOUT,
               f"redis_write has exactly {master.name} UP")
    wait_until(lambda: hap.servers_up("redis_read") == [replica.name], ROUTING_TIMEOUT,
               f"redis_read has exactly {replica.name} UP")
    with Sampler(hap, "redis_write") as s:
        time.sleep(3)
    assert s.samples and all(up == (master.name,) for _, up in s.samples), s.transitions()
    figures("redis steady state", f"redis_write UP={[master.name]}, redis_read UP={[replica.name]}")


def test_planned_failover_never_two_writers(redis_cluster, redis_dbcheck_setup, haproxy_factory, workdir,
                                            figures):
    old = redis_cluster.wait_stable()
    hap, _ = start_haproxy(redis_cluster, redis_dbcheck_setup, haproxy_factory, workdir)
    wait_until(lambda: hap.servers_up("redis_write") == [old.name], ROUTING_TIMEOUT, f"{old.name} UP")
    with Sampler(hap, "redis_write") as s, RoleWatcher(redis_cluster, old) as roles:
        time.sleep(1)
        t0 = time.monotonic()
        new = redis_cluster.failover()
        wait_until(lambda: hap.servers_up("redis_write") == [new.name], 30, f"{new.name} alone UP")
        t_routed = time.monotonic() - t0
        wait_until(lambda: roles.first(lambda r: r[0] == "slave", t0), 30,
                   f"Sentinel converts the old master {old.name} to a replica")
        time.sleep(1)
    during = [up for t, up in s.samples if t >= t0]
    double = [up for up in during if len(up) > 1]
    t_old_out = s.first(lambda up: old.name not in up, since=t0)[0]
    t_converted = roles.first(lambda r: r[0] == "slave", t0)
    no_writer = [t for t, up in s.samples if t >= t0 and not up]
    assert double == [], s.transitions()
    assert t_old_out < t_converted, (t_old_out - t0, t_converted - t0)
    assert t_routed <= 30, t_routed  # loose: every check's process start-up is in it
    gap = (no_writer[-1] - no_writer[0] + 0.1) if no_writer else 0.0
    figures("redis planned failover (SENTINEL FAILOVER)",
            f"old master out of redis_write at +{t_old_out - t0:.1f}s, Sentinel converted it at "
            f"+{t_converted - t0:.1f}s; new master routed at +{t_routed:.1f}s; no writer for "
            f"{gap:.1f}s; samples with two writers UP: {len(double)} of {len(during)}")
    redis_cluster.wait_stable(timeout=30)


def test_unplanned_failover_old_master_never_returns(redis_cluster, redis_dbcheck_setup, haproxy_factory,
                                                     workdir, figures):
    old = redis_cluster.wait_stable()
    hap, _ = start_haproxy(redis_cluster, redis_dbcheck_setup, haproxy_factory, workdir)
    wait_until(lambda: hap.servers_up("redis_write") == [old.name], ROUTING_TIMEOUT, f"{old.name} UP")
    new = next(n for n in redis_cluster.nodes() if n != old)
    with Sampler(hap, "redis_write") as s, RoleWatcher(redis_cluster, old) as roles:
        time.sleep(1)
        t0 = time.monotonic()
        redis_cluster.sigstop(old)
        try:
            wait_until(lambda: redis_cluster.master() == new, 30,
                       "the Sentinel majority names the new master")
            wait_until(lambda: hap.servers_up("redis_write") == [new.name], 30, f"{new.name} alone UP")
            t_routed = time.monotonic() - t0
        finally:
            redis_cluster.sigcont(old)
        t_cont = time.monotonic()
        # The old master comes back answering ROLE master until Sentinel converts it (~10 s).
        wait_until(lambda: roles.first(lambda r: r[0] == "slave", t_cont), 40,
                   f"Sentinel converts the returning {old.name}")
        came_back_as_master = roles.first(lambda r: r[0] == "master", t_cont)
        time.sleep(1)
    during = [up for t, up in s.samples if t >= t0]
    assert all(old.name not in up for t, up in s.samples if t >= t_cont), s.transitions()
    assert all(len(up) <= 1 for up in during), s.transitions()
    assert came_back_as_master is not None, "the premise failed: the old master did not return as master"
    figures("redis unplanned failover (SIGSTOP master)",
            f"writes routed to the new master {t_routed:.1f}s after the master froze "
            f"(down-after-milliseconds 2000); the old master answered ROLE master after SIGCONT and "
            f"never entered redis_write; samples with two writers UP: 0 of {len(during)}")
    redis_cluster.wait_stable(timeout=30)
