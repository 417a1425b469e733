"""Partition labs for the failover proof: the same clusters, variants, writers and
classification as bench/failover/failover.py, but every host in a network namespace of its
own (lab/netns.py), so a fault can cut a host from some peers while it
still answers others, as a real partition does.

Hosts, on one private bridge (10.213.0.0/24, reachable from nowhere else):
    obs       the harness itself: the manager and role watches, patronictl, the final count
              (never cut: the observer must see what happened)
    proxy     the six HAProxy processes, their external checks and the writer clients
    PostgreSQL: etcd (the DCS); pg1..pg3, one Patroni member each with its PostgreSQL and its
              dbcheck-agent (a sidecar)
    Redis:    redis1 (node + sentinel1 + its agent), redis2 (node + sentinel2 + its agent),
              sentinel3

Scenarios. Those that move the primary are healed HOLD s after the manager named a new one;
the steady ones (the primary must stay where it is) are held STEADY_HOLD s, then healed:
    N1 pg partition          the leader host cut from etcd and the other members, both ways;
                             HAProxy and the clients still reach it
    N2 redis partition       the master host (node + its Sentinel) cut from the other Sentinels
                             and the replica; HAProxy and the clients still reach it
    N3 replica-cut (steady)  a replica host cut from the primary's host only: the readers must
                             take it out within the documented bound (reader_bound()), and the
                             writer must not notice
    N4 redis sentinel-minority (steady)  sentinel3's host cut from the two others: nothing may
                             change
    N5 pg partition-in       the leader host receives nothing from etcd (it can still send)
    N6 proxy-cut (steady)    HAProxy's host cut from the managers (Patroni's REST ports and
                             etcd; the Sentinels' ports), not from the nodes: a check that asks
                             the manager from HAProxy's host fails closed (the external check),
                             one that asks from the database host does not (the agent)
    pg etcd-down, etcd-down-failsafe (long: left out of the short mode, as on loopback) the
                             loopback lab's DCS outage, here where each member has an address
                             of its own, so a check can tell which member is the node's own

How a dbcheck configuration's time without a writer is judged (window_rule()): in N1, N2 and
N5, its time without a kept write against every anchor's; in N3 and N4, and for the agent in
N6, no second without a kept write beyond the steadiest anchor's; for the external check in
N6, which must fail closed there, its time from the heal to its first kept write against the
anchor that asks over the same path (Patroni's GET /primary; the seed check's Sentinel).
"""

import labs
import report
import variants as V
from lab import redis as redis_fx
from lab.netns import NetLab
from lab.patroni import APP_DB, APP_PASSWORD, APP_USER, PatroniCluster
from lab.procs import wait_until
from lab.writers import PgWriter, RedisWriter

PG_HOSTS = ["obs", "proxy", "etcd", "pg1", "pg2", "pg3"]
REDIS_HOSTS = ["obs", "proxy", "redis1", "redis2", "sentinel3"]
PG_MAX_LAG, REDIS_MAX_LAG = 1.0, 2.0  # the readers' max_lag in the configs the fixtures write
LAG_WINDOW = 5.0  # dbcheck-agent's lag_window default: a replica over max_lag stays up this long
READ_AGENT_INTER = 0.5  # the agent example's read backends: agent-inter 500ms

report.SCENARIO_TEXT.update({
    ("pg", "partition"): "N1: leader host cut from etcd and the other members (HAProxy and clients still "
                         "reach it); healed after the switch",
    ("pg", "partition-in"): "N5: leader host receives nothing from etcd (it still sends); "
                            "healed after the switch",
    ("pg", "replica-cut"): "N3: a replica host cut from the leader's host only, 15 s (readers)",
    ("pg", "proxy-cut"): "N6: HAProxy's host cut from Patroni's REST API and etcd (not from PostgreSQL), "
                         "15 s",
    ("redis", "partition"): "N2: master host (node + its Sentinel) cut from the other Sentinels and the "
                            "replica (HAProxy and clients still reach it); healed after the switch",
    ("redis", "sentinel-minority"): "N4: one Sentinel's host cut from the rest of the cluster, 15 s",
    ("redis", "replica-cut"): "N3: the replica's host (node + its Sentinel) cut from the master's host, "
                              "15 s (readers)",
    ("redis", "proxy-cut"): "N6: HAProxy's host cut from the Sentinels (not from the nodes), 15 s",
})


def reader_bound(v, max_lag):
    """The documented worst time from a replica's stream breaking (the primary writing) until
    configuration v's HAProxy takes it out of the read backend. The lag passes max_lag first.
    External check (inter 1 s, fall 2): the check running at that moment may still pass (a
    replica behind but within max_lag is re-read until the deadline, docs/lag.md), then fall
    checks each start inter after the previous one ended; each takes up to the time HAProxy
    allows a check process, its kill time (1 s), not dbcheck's own deadline (0.8 s): the
    process's start comes before that deadline begins, and on a loaded host it is not free.
    (fall + 1) kill + fall inter. Agent (its checks run inside it, time limit t): the round
    that first sees it over max_lag
    starts up to an interval later and takes up to t; lag_window runs from that round's end; the
    first round after it starts up to an interval later and takes up to t; HAProxy reads the
    answer within the read backend's agent-inter."""
    if v.key == "c":
        fall = V.EXTERNAL_SETTINGS[0]
        return max_lag + (fall + 1) * V.HAPROXY_CHECK_TIMEOUT + fall * V.INTER
    t = V.DBCHECK_TIMEOUT
    return max_lag + LAG_WINDOW + 2 * (V.AGENT_INTERVAL + t) + READ_AGENT_INTER


class NetLabMixin:
    """What both engines' partition labs add to their loopback lab: the hosts, the observer
    thread, the writers on the clients' host, and the readers' measure."""

    steady = ("replica-cut", "proxy-cut", "sentinel-minority")
    window_field = "kept_window_s"
    same_path = {}  # N6: the anchor that asks the manager over the path the fault cuts

    def window_rule(self, scenario, v):
        """See the module docstring."""
        if scenario in getattr(self, "held", {}):
            return super().window_rule(scenario, v)  # the loopback lab's DCS-outage rule
        if scenario in ("replica-cut", "sentinel-minority") or (scenario == "proxy-cut" and v.key == "d"):
            return ("no_outage", None)
        if scenario == "proxy-cut":
            return ("recovery", [self.same_path[v.key]])
        return ("window", None)

    def heal_all(self):
        """Flush every host's fault rules (a run that failed half-way leaves none behind)."""
        self.net.heal()

    def ready(self, scenario, old):
        """Before a replica is cut, it must be in every dbcheck configuration's read backend:
        otherwise "taken out in 0 s" would be measured. The loopback lab's own needs first."""
        super().ready(scenario, old)
        if scenario != "replica-cut":
            return
        name = self.cut_replica(old)
        for v in self.variants:
            if v.dbcheck:
                srv = self.server_name(v, name)
                wait_until(lambda v=v, srv=srv: srv in self.haproxies[v.key].servers_up(self.read_backend),
                           60, f"({v.key}): {name} UP in {self.read_backend}")

    def settle(self, not_master=None):
        """The loopback lab's settle(), then until every replica has caught up with the primary:
        after a long cut the stream's TCP retransmissions back off, so a replica can look
        connected while nothing has flowed yet."""
        new = super().settle(not_master)
        wait_until(lambda: self.caught_up(new), 60, "every replica caught up with the primary")
        return new

    def start(self):
        # The harness's main thread (and every thread it starts: watches, pools) lives on the
        # observer host; the writers move to the clients' host themselves.
        self.net.start()
        self.net.enter("obs")
        return super().start()

    def stop(self):
        try:
            super().stop()
        finally:
            self.net.stop()

    def enter_proxy(self):
        """Called first in each writer's thread."""
        self.net.enter("proxy")

    def cut(self, run, host, peers, **kw):
        """net.cut(...), noted in the run; returns the heal."""
        c = self.net.cut(host, peers, **kw)
        run.setdefault("cuts", []).append({"host": host, "peers": list(peers), **kw})
        return lambda: self.net.heal(c)

    def cut_replica(self, old):
        """The replica N3 cuts: the first data node that is not the primary `old` (a name)."""
        return self.cluster.replicas(self.cluster.node(old))[0].name

    def reader_figures(self, v, h, ctx, run):
        """See reader_figures() below."""
        return reader_figures(self, v, h, ctx, run)

    def readers(self, run, replica):
        """Note that the scenario cuts `replica` (a node name) from its primary: judge() then
        measures when each dbcheck configuration's read backend took it out."""
        run["reader_cut"] = replica
        run["reader_max_lag_s"] = self.max_lag


class NetPgLab(NetLabMixin, labs.PgLab):
    """PgLab with every host in its own network namespace (see the module docstring)."""

    scenarios = ("partition", "partition-in", "replica-cut", "proxy-cut", *labs.PgLab.held)
    steady = (*NetLabMixin.steady, *labs.PgLab.steady)
    read_backend = "pg_read"
    max_lag = PG_MAX_LAG
    same_path = {"c": "a"}  # Patroni's GET /primary from HAProxy's host

    def caught_up(self, leader):
        """True when every other member has replayed the leader's current WAL position."""
        with self.cluster.superuser_conn(leader) as conn, conn.cursor() as cur:
            cur.execute("SELECT pg_current_wal_lsn()")
            target = cur.fetchone()[0]
        for m in self.cluster.members():
            if m.name == leader:
                continue
            with self.cluster.superuser_conn(m) as conn, conn.cursor() as cur:
                cur.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,))
                if not cur.fetchone()[0]:
                    return False
        return True

    def __init__(self, workdir):
        super().__init__(workdir)
        self.net = NetLab(PG_HOSTS)
        self.cluster = PatroniCluster(workdir / "cluster", net=self.net, ctl_host="obs")
        self.place = self.net.argv("proxy", [])

    def writer(self, v):
        return PgWriter(v.key, v.write_port, f"proof_{v.key}", APP_USER, APP_PASSWORD, APP_DB,
                        enter=self.enter_proxy)

    def inject(self, scenario, old, run):
        """Cut as the scenario says; returns the heal."""
        others = [m.name for m in self.cluster.replicas(self.cluster.node(old))]
        if scenario == "partition":
            return self.cut(run, old, ["etcd", *others])
        if scenario == "partition-in":
            return self.cut(run, old, ["etcd"], direction="in")
        if scenario == "replica-cut":
            replica = self.cut_replica(old)
            self.readers(run, replica)
            return self.cut(run, replica, [old])
        if scenario == "proxy-cut":
            heal_rest = self.cut(run, "proxy", [m.name for m in self.cluster.members()],
                                 ports=[m.rest_port for m in self.cluster.members()])
            heal_etcd = self.cut(run, "proxy", ["etcd"])
            return lambda: (heal_rest(), heal_etcd())
        return super().inject(scenario, old, run)


class NetRedisLab(NetLabMixin, labs.RedisLab):
    """RedisLab with every host in its own network namespace (see the module docstring)."""

    scenarios = ("partition", "sentinel-minority", "replica-cut", "proxy-cut")
    read_backend = "redis_read"
    max_lag = REDIS_MAX_LAG
    same_path = {"c": "b"}  # the seed check: one Sentinel, asked from HAProxy's host

    def caught_up(self, master):
        """True when the replica's replication offset has reached the master's."""
        m = self.cluster.get(master)
        info = lambda n: dict(line.split(":", 1)  # noqa: E731
                              for line in self.cluster.admin(n, "INFO", "replication").splitlines()
                              if ":" in line)
        target = int(info(m)["master_repl_offset"])
        return all(int(info(n).get("slave_repl_offset", -1)) >= target
                   for n in self.cluster.nodes() if n != m)

    def __init__(self, workdir):
        super().__init__(workdir)
        self.net = NetLab(REDIS_HOSTS)
        self.cluster = redis_fx.RedisSentinelCluster(workdir / "cluster", net=self.net)
        self.place = self.net.argv("proxy", [])

    def writer(self, v):
        return RedisWriter(v.key, v.write_port, f"proof:{v.key}", "default", redis_fx.ADMIN_PASSWORD,
                           enter=self.enter_proxy)

    def inject(self, scenario, old, run):
        """Cut as the scenario says; returns the heal."""
        self.fencing(False)
        master, replica = self.cluster.get(old), self.cluster.get(self.cut_replica(old))
        if scenario == "partition":
            return self.cut(run, master.host, [replica.host, "sentinel3"])
        if scenario == "sentinel-minority":
            return self.cut(run, "sentinel3", [master.host, replica.host])
        if scenario == "replica-cut":
            self.readers(run, replica.name)
            return self.cut(run, replica.host, [master.host])
        if scenario == "proxy-cut":
            sentinels = self.cluster.sentinels()
            return self.cut(run, "proxy", sorted({s.host for s in sentinels}),
                            ports=[s.port for s in sentinels])
        return super().inject(scenario, old, run)


def reader_figures(lab, v, h, ctx, run):
    """For a scenario that cut a replica (run['reader_cut']) and a dbcheck configuration v with
    HAProxy h: when its read backend took the replica out, and the documented bound."""
    name = run.get("reader_cut")
    if not name or not v.dbcheck:
        return {}
    srv = lab.server_name(v, name)
    events = [(tw - ctx["offset"], s, st) for tw, s, st in h.state_events(lab.read_backend)]
    before = [st for t, s, st in events if s == srv and t < ctx["t_fault"]]
    out = ctx["t_fault"] if before and before[-1] == "DOWN" else \
        next((t for t, s, st in events if s == srv and st == "DOWN" and t >= ctx["t_fault"]), None)
    back = next((t for t, s, st in events if s == srv and st == "UP" and out and t > out), None)
    return {"reader_out_s": round(out - ctx["t_fault"], 2) if out else None,
            "reader_back_after_heal_s": (round(back - ctx["comeback_at"], 2)
                                         if back and ctx["comeback_at"] else None),
            "reader_bound_s": round(reader_bound(v, run["reader_max_lag_s"]), 2)}


LABS = (NetPgLab, NetRedisLab)
