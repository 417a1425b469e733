"""Partition labs for the failover proof (issue 11): the same cluster, variants, writers and
classification as bench/failover/failover.py, but every host in a network namespace of its
own (tests/integration/fixtures/netns.py), so a fault can cut a host from some peers while it
still answers others, as a real partition does.

Hosts, on one private bridge (10.213.0.0/24, reachable from nowhere else):
    obs     the harness itself: the manager and role watches, patronictl, the final count
            (never cut: the observer must see what happened)
    proxy   the six HAProxy processes, their external checks and the writer clients
    etcd    the DCS
    pg1..3  one Patroni member each, with its PostgreSQL and its dbcheck-agent (a sidecar)

Scenarios (each healed HOLD seconds after the manager named a new primary, then settled):
    partition     N1: the leader host cut from etcd and the other members, both ways; HAProxy
                  and the clients still reach it
    partition-in  N5: the leader host receives nothing from etcd (it can still send to it);
                  the members and HAProxy still reach it
"""

import failover as F
from fixtures.netns import NetLab
from fixtures.patroni import APP_DB, APP_PASSWORD, APP_USER, PatroniCluster
from fixtures.writers import PgWriter

PG_HOSTS = ["obs", "proxy", "etcd", "pg1", "pg2", "pg3"]

F.SCENARIO_TEXT.update({
    ("pg", "partition"): "N1: leader host cut from etcd and the other members (HAProxy and clients still reach it); "
                         "healed after the switch",
    ("pg", "partition-in"): "N5: leader host receives nothing from etcd (it still sends); healed after the switch",
})


class NetPgLab(F.PgLab):
    """PgLab with every host in its own network namespace (see the module docstring)."""

    scenarios = ("partition", "partition-in")

    def __init__(self, workdir):
        super().__init__(workdir)
        self.net = NetLab(PG_HOSTS)
        self.cluster = PatroniCluster(workdir / "cluster", net=self.net, ctl_host="obs")
        self.place = self.net.argv("proxy", [])

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

    def writer(self, v):
        return PgWriter(v.key, v.write_port, f"proof_{v.key}", APP_USER, APP_PASSWORD, APP_DB,
                        enter=lambda: self.net.enter("proxy"))

    def inject(self, scenario, old, run):
        """Cut the old leader's host as the scenario says; returns the heal."""
        others = [m.name for m in self.cluster.members() if m.name != old]
        if scenario == "partition":
            cut = self.net.cut(old, ["etcd", *others])
        elif scenario == "partition-in":
            cut = self.net.cut(old, ["etcd"], direction="in")
        else:
            return super().inject(scenario, old, run)
        run["cut"] = {"host": cut.host, "peers": list(cut.peers), "direction": cut.direction}
        return lambda: self.net.heal(cut)


LABS = (NetPgLab,)
