"""Failover proof: numbered writes through HAProxy while the primary changes, side by side for
six HAProxy configurations watching the same cluster at the same time.

For each engine one real lab is started (PostgreSQL: etcd + 3 Patroni members; Redis: 2 nodes
+ 3 Sentinels) with six HAProxy processes in front of it (bench/failover/variants.py: the two
anchors and dbcheck's external check at the external example's settings, the two anchors and
dbcheck-agent at the agent example's), one writer client per HAProxy
(tests/integration/fixtures/writers.py). Beside the writers, every 100 ms: the cluster
manager's choice of primary (etcd's leader key; the Sentinels by dbcheck's own voting rule),
and every data node's own role (pg_is_in_recovery() over a kept connection; ROLE)
(bench/failover/watches.py). Each scenario run: writes start, the fault is injected, the
manager names a new primary (T0), the old primary comes back where the scenario says so, the
cluster settles, writes stop, and every acknowledged id is looked up on the final primary.

Each lost write is classified (bench/failover/losses.py) as manager, manager reversal, at the
manager's change, two-writer, routing within B, or routing late. Two writers UP is read from each HAProxy's own
log: its "Server B/S is UP|DOWN" lines, with HAProxy's own microsecond timestamps.

The gate, per scenario (exit 1 otherwise), for each dbcheck configuration: in every run no
late loss, no time with two writers UP, and an error window not more than 1 s plus one check
interval longer than every anchor's in that run; over the scenario's runs in this invocation,
a median error window not more than 1 s longer than every anchor's median, and routing losses
(all but manager, manager-reversal and at-change ones) no more, beyond chance (binomial test,
p < 0.01), than the lowest anchor's at the configuration's own detection settings.

  /usr/bin/python3 bench/failover/failover.py [--reps N] [--engine pg|redis] [--scenario S]
Results: a JSON line per (run, variant) in build/failover/runs.jsonl and the Markdown table
in docs/results.md (section "failover").
"""  # noqa: E501 - the --help text, kept as it was

import argparse
import base64
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from pathlib import Path

# bench and tests/integration (the fixtures package) are on PYTHONPATH: bench/failover/run and
# scripts/test source scripts/pythonpath, pytest reads setup.cfg.
import results
import losses as L
import variants as V
import watches as W
from fixtures import peers
from fixtures import redis as redis_fx
from fixtures.agent import start_pg_agents, start_redis_agents
from fixtures.binaries import agent_bin, dbcheck_bin
from fixtures.dbcheck import operator_lines, write_check_wrapper, write_dbcheck_config, write_redis_config
from fixtures.haproxy import HAProxy
from fixtures.patroni import APP_DB, APP_PASSWORD, APP_USER, SUPERUSER, PatroniCluster
from fixtures.procs import wait_until
from fixtures.writers import PgWriter, RedisWriter

# --peer: the environment variable fixtures/peers.py reads, its value, and the engine it is for.
PEERS = {"patroni4": ("DBCHECK_PATRONI", "4", "pg"), "valkey8": ("DBCHECK_REDIS", "valkey", "redis")}

REPO = Path(__file__).resolve().parents[2]
DBCHECK = dbcheck_bin()
AGENT = agent_bin()
OUT = REPO / "build" / "failover"
WARMUP, AFTER = 1.5, 2.0  # seconds of writes before the fault and after everything settled
HOLD = 4.0  # seconds the old primary stays away after the manager named a new one
# Seconds a fault that must not move the primary lasts: well past Sentinel's down-after (2 s
# here) plus a failover's start, and Patroni's retry_timeout (5 s) plus a loop.
STEADY_HOLD = 15.0
_http = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _signal(pid, sig):
    """os.kill that ignores a process gone meanwhile (a backend that was already exiting)."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


# ------------------------------------------------------------------ labs
class Lab:
    """What both engines' labs share: one HAProxy per variant, the agents, the cluster.
    `place`: the argv prefix that runs HAProxy and the clients' tools where the clients are
    (nothing on loopback; a NetLab host in bench/failover/partitions.py)."""

    place = ()
    steady = ()  # scenarios whose fault must not move the primary (held STEADY_HOLD s, then healed)
    # The window the gate compares: error_window_s (first failed write to the first on the new
    # primary), or kept_window_s, which also starts at the first acknowledged write that was lost
    # (the partition labs: an old primary that HAProxy can still reach acknowledges writes that
    # are then lost, which would make the check that keeps routing to it look fastest).
    window_field = "error_window_s"

    def window_rule(self, scenario, v):
        """How dbcheck configuration v's time without a writer is judged in `scenario`:
        ("window", None): its window against every anchor's (the failover scenarios);
        ("no_outage", None): no second without a kept write beyond the steadiest anchor's;
        ("recovery", [anchor keys]): the time from the heal to its first kept write, against
        those anchors' (they ask over the same path the fault cut)."""
        return ("window", None)

    def heal_all(self):
        """Undo every fault still in place (nothing here: the partition labs' cuts)."""

    def ready(self, scenario, old):
        """Wait (bounded) for what `scenario` needs beyond the writers' routing (nothing here)."""

    def reader_figures(self, v, h, ctx, run):
        """Figures about the read backend for a scenario that cut a replica ({} here: the
        partition labs measure them)."""
        return {}

    # The data nodes, through the lab protocol (fixtures/lab.py) of self.cluster.
    def node_port(self, name):
        """The database port of node `name`."""
        return self.cluster.node(name).port

    def node_names(self):
        """The data nodes' names, in name order."""
        return [n.name for n in self.cluster.nodes()]

    def node_addrs(self):
        """{name: 'ip:port'} of every data node, as dbcheck and HAProxy are given it."""
        return {n.name: n.addr for n in self.cluster.nodes()}

    def start_haproxies(self):
        """Start one HAProxy per variant, each in its own directory."""
        for v in self.variants:
            self.haproxies[v.key] = HAProxy(self.workdir / v.key, v.cfg, place=self.place).start()

    def server_name(self, v, name):
        """Node `name` as variant v's HAProxy names the server."""
        return str(self.node_port(name)) if v.names_by_port else name

    def role_watches(self):
        """One started RoleWatch per data node: {name: RoleWatch}."""
        return {n: W.RoleWatch(n, self.role_probe(n)).start() for n in self.node_names()}

    def verdict_watch(self):
        """A started VerdictWatch of dbcheck's write backend over every data node."""
        return W.VerdictWatch(DBCHECK, self.check_config, self.write_backend, self.node_addrs().values(),
                              place=self.place).start()

    def stop(self):
        """Stop the HAProxies, the agents and the cluster (each by its PIDs); one that fails to
        stop does not keep the others running (the first error is raised after)."""
        errors = []
        for thing in [*self.haproxies.values(), *self.agents, self.cluster]:
            try:
                thing.stop()
            except Exception as exc:  # noqa: BLE001 - raised below, after the rest stopped
                errors.append(exc)
        if errors:
            raise errors[0]


class PgLab(Lab):
    """A Patroni cluster with the four PostgreSQL variants in front of it."""

    engine = "pg"
    write_backend = "pg_write"
    scenarios = ("switchover", "dbcheck-switchover", "freeze", "patroni-dies")

    def __init__(self, workdir):
        self.workdir = workdir
        self.cluster = PatroniCluster(workdir / "cluster")
        self.haproxies, self.agents, self.variants = {}, [], []
        self.repairs = []  # members re-initialised by settle()

    def start(self):
        self.cluster.start()
        self.check_config = write_dbcheck_config(self.workdir / "dbcheck", self.cluster)
        wrapper = write_check_wrapper(self.workdir / "dbcheck" / "dbcheck-wrapper", DBCHECK,
                                      self.check_config)
        # `dbcheck switchover` runs as the operator (root here), from its own config.
        self.op_config = write_dbcheck_config(self.workdir / "dbcheck-op", self.cluster, owner=None)
        self.agents = start_pg_agents(self.workdir / "agents", self.cluster, AGENT)
        self.variants = V.pg_variants(self.cluster, self.workdir, wrapper, self.agents)
        self.start_haproxies()
        with self.cluster.superuser_conn(self.cluster.wait_primary()) as conn, conn.cursor() as cur:
            for v in self.variants:
                cur.execute(f"CREATE TABLE IF NOT EXISTS proof_{v.key} (id bigint PRIMARY KEY)")
                cur.execute(f"ALTER TABLE proof_{v.key} OWNER TO {APP_USER}")
        return self

    def primary(self):
        """The leader key in etcd (etcd v3 JSON gateway): the member name, or None."""
        key = f"/service/{self.cluster.scope}/leader".encode()
        req = urllib.request.Request(f"http://{self.cluster.etcd_ip}:{self.cluster.etcd_port}/v3/kv/range",
                                     data=json.dumps({"key": base64.b64encode(key).decode()}).encode())
        with _http.open(req, timeout=0.5) as resp:
            kvs = json.loads(resp.read()).get("kvs") or []
        return base64.b64decode(kvs[0]["value"]).decode() if kvs else None

    def role_probe(self, name):
        """pg_is_in_recovery() of member `name` over the unix socket, as the superuser."""
        return W.PgRole(dict(host=str(self.cluster.socket_dir), port=self.node_port(name), user=SUPERUSER,
                             dbname=APP_DB, application_name="proof-role"))

    def settle(self, not_master=None):
        """The leader once every member streams from it (`not_master` is not enforced: Patroni
        may rightly hand leadership back to the old leader, see docs/failover.md). A member left
        on a timeline the leader does not have (after the manager took the key back from it;
        Patroni 3.0.2 does not always rewind it) is re-initialised from the leader, as an
        operator would, and noted in self.repairs."""
        try:
            return self.cluster.wait_healthy(60).name
        except AssertionError:
            leader = self.cluster.leader()
            if leader is None:
                raise
            stuck = [m.name for m in self.cluster.members()
                     if m != leader and m.name not in self.cluster.streaming_replicas(leader)]
            for name in stuck:
                self.cluster.patronictl("reinit", self.cluster.scope, name, "--force", "--wait", timeout=180)
            self.repairs += stuck
            return self.cluster.wait_healthy(120).name

    def make_first_primary(self):
        """Switch over to pg1 (listed first in every variant) unless it leads already."""
        first, leader = self.cluster.nodes()[0], self.cluster.node(self.settle())
        if leader != first:
            self.cluster.switchover(first.name, leader=leader.name)
            wait_until(lambda: self.cluster.wait_healthy(120) == first, 120, f"{first.name} leading")

    def prepare(self, v):
        with self.cluster.superuser_conn(self.cluster.primary()) as conn, conn.cursor() as cur:
            cur.execute(f"TRUNCATE proof_{v.key}")

    def writer(self, v):
        return PgWriter(v.key, v.write_port, f"proof_{v.key}", APP_USER, APP_PASSWORD, APP_DB)

    def stored(self, v, primary):
        with self.cluster.superuser_conn(primary) as conn, conn.cursor() as cur:
            cur.execute(f"SELECT id FROM proof_{v.key}")
            return {r[0] for r in cur.fetchall()}

    def inject(self, scenario, old, run):
        """Start the fault; returns a callable bringing the old primary back (or None)."""
        m = self.cluster.node(old)
        if scenario == "switchover":
            candidate = self.cluster.replicas(m)[0]
            self.cluster.switchover(candidate.name, leader=old)
            return None
        if scenario == "dbcheck-switchover":
            candidate = self.cluster.replicas(m)[0]
            run["switchover"] = dbcheck_switchover(self.op_config, "pg", "--to", candidate.pg_addr)
            return None
        if scenario == "freeze":
            pids = self.cluster.member_pids(m)
            for pid in pids:
                _signal(pid, signal.SIGSTOP)
            run["frozen_pids"] = len(pids)
            return lambda: [_signal(pid, signal.SIGCONT) for pid in reversed(pids)]
        if scenario == "patroni-dies":
            self.cluster.kill_patroni(m)
            return lambda: self.cluster.start_patroni(m)
        raise ValueError(scenario)


class RedisLab(Lab):
    """Two Redis nodes and three Sentinels with the four Redis variants in front of them."""

    engine = "redis"
    write_backend = "redis_write"
    scenarios = ("failover", "dbcheck-switchover", "freeze", "failover+fencing", "freeze+fencing")

    def __init__(self, workdir):
        self.workdir = workdir
        self.cluster = redis_fx.RedisSentinelCluster(workdir / "cluster")
        self.haproxies, self.agents, self.variants = {}, [], []
        self.repairs = []

    def start(self):
        self.cluster.start()
        self.check_config = write_redis_config(self.workdir / "dbcheck", self.cluster)
        wrapper = write_check_wrapper(self.workdir / "dbcheck" / "dbcheck-wrapper", DBCHECK,
                                      self.check_config)
        self.op_config = write_redis_config(self.workdir / "dbcheck-op", self.cluster, owner=None,
                                            cluster_extra=operator_lines(self.workdir / "operator",
                                                                         redis_fx.OPERATOR_USER,
                                                                         redis_fx.OPERATOR_PASSWORD))
        self.agents = start_redis_agents(self.workdir / "agents", self.cluster, AGENT)
        self.variants = V.redis_variants(self.cluster, self.workdir, wrapper, self.agents)
        self.start_haproxies()
        self.sentinels = W.SentinelManager(self.cluster, redis_fx.MASTER_NAME, redis_fx.redis_pipeline,
                                           dict(user="default", password=redis_fx.SENTINEL_ADMIN_PASSWORD))
        return self

    def primary(self):
        """The master a strict majority of the Sentinels names by dbcheck's own rule, or None."""
        return self.sentinels()

    def stop(self):
        if getattr(self, "sentinels", None):
            self.sentinels.close()
        super().stop()

    def role_probe(self, name):
        """ROLE of data node `name` (a new connection each time, as the admin user)."""
        node = self.cluster.node(name)
        return lambda: (W.PRIMARY if self.cluster.role(node, timeout=W.ROLE_TIMEOUT)[0] == "master"
                        else W.REPLICA)

    def settle(self, not_master=None):
        return self.cluster.wait_stable(60, not_master=not_master).name

    def make_first_primary(self):
        """Fail over to redis1 (listed first in every variant) unless it is the master; then
        wait until every Sentinel lists the replica as healthy (a failover needs one)."""
        first, master = self.cluster.nodes()[0], self.cluster.wait_primary(60)
        if master != first:
            self.fencing(False)
            self.cluster.failover(timeout=45)  # a failover back after fencing can take longer than 15 s
            self.cluster.wait_stable(60, not_master=master)
        self.cluster.wait_settled(60)

    def prepare(self, v):
        self.cluster.admin(self.cluster.wait_primary(), "DEL", f"proof:{v.key}")

    def writer(self, v):
        return RedisWriter(v.key, v.write_port, f"proof:{v.key}", "default", redis_fx.ADMIN_PASSWORD)

    def stored(self, v, primary):
        return {int(x) for x in self.cluster.admin(primary, "LRANGE", f"proof:{v.key}", 0, -1, timeout=5)}

    def fencing(self, on):
        """min-replicas-to-write 1 + min-replicas-max-lag 1 on every node (or back to off)."""
        for n in self.cluster.nodes():
            self.cluster.admin(n, "CONFIG", "SET", "min-replicas-to-write", 1 if on else 0,
                               "min-replicas-max-lag", 1 if on else 10)

    def inject(self, scenario, old, run):
        self.fencing(scenario.endswith("+fencing"))
        if scenario == "dbcheck-switchover":
            run["switchover"] = dbcheck_switchover(self.op_config, "cache")
            return None
        if scenario.startswith("failover"):
            self.cluster.failover(wait=False)
            return None
        if scenario.startswith("freeze"):
            self.cluster.sigstop(old)
            return lambda: self.cluster.sigcont(old)
        raise ValueError(scenario)


def dbcheck_switchover(config, cluster, *args):
    """Run `dbcheck switchover` to completion; its summary line, or RuntimeError with its output."""
    res = subprocess.run([str(DBCHECK), "--config", str(config), "switchover", cluster, *args],
                         capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    if res.returncode != 0:
        raise RuntimeError(f"dbcheck switchover exited {res.returncode}:\n{res.stdout}{res.stderr}")
    return res.stdout.strip().splitlines()[-1]


# ------------------------------------------------------------------ one run
def routed_only(lab, v, name):
    """True when variant v's write backend has exactly node `name` UP (`show stat`)."""
    return lab.haproxies[v.key].servers_up(v.backend) == [lab.server_name(v, name)]


def wall_offset():
    """time.time() - time.monotonic(): turns HAProxy's wall-clock log times into the writers' clock."""
    return time.time() - time.monotonic()


def start_state(lab, scenario):
    """Bring the lab to a run's starting point and return the primary: the first-listed server
    leads, every proof table is empty, no fencing, every configuration routes writes to it
    alone, and what `scenario` needs beyond that (Lab.ready) holds."""
    lab.make_first_primary()
    old = lab.settle()
    for v in lab.variants:
        lab.prepare(v)
    if isinstance(lab, RedisLab):
        lab.fencing(False)
    for v in lab.variants:  # every configuration starts from the same, correct routing
        wait_until(lambda v=v: routed_only(lab, v, old), 60, f"{v.key}: only {old} UP")
    lab.ready(scenario, old)
    return old


def run_scenario(lab, scenario, rep, reasons=True):
    """One scenario run with every variant at once; returns a list of per-variant dicts.
    Every run starts with the first-listed server as primary: with `balance first` that is the
    server HAProxy prefers whenever it is UP, the worst case for a check that keeps the old
    primary UP (and the usual steady state of a hand-written server list)."""
    old = start_state(lab, scenario)
    run = {"engine": lab.engine, "scenario": scenario, "rep": rep, "old": old}
    repairs_before = len(lab.repairs)
    offset_before = wall_offset()
    watch = W.ManagerWatch(lab.primary).start()
    roles = lab.role_watches()
    verdicts = lab.verdict_watch() if reasons else None
    writers = {v.key: lab.writer(v) for v in lab.variants}
    t_start = time.monotonic()
    for w in writers.values():
        w.start()
    comeback_at, comeback = None, None
    try:
        time.sleep(WARMUP)  # steady writes before the fault (measured, not waited for)
        t_fault = time.monotonic()
        comeback = lab.inject(scenario, old, run)
        steady = scenario in lab.steady
        if steady:
            time.sleep(STEADY_HOLD)  # the primary must stay where it is: measured, not waited for
        else:
            wait_until(lambda: watch.switch(old, t_fault)[1], 90,
                       f"the manager naming a primary other than {old}")
        if comeback:
            if not steady:
                time.sleep(HOLD)  # the old primary stays away a while after the switch
            comeback_at = time.monotonic()
            comeback, undo = None, comeback
            undo()
        new = lab.settle(not_master=None if steady else old)
        for v in lab.variants:  # bounded: a naive variant may never route right, that is data
            try:
                wait_until(lambda v=v: routed_only(lab, v, new), 30, f"{v.key}: only {new} UP")
            except AssertionError:
                run.setdefault("unsettled", []).append(v.key)
        time.sleep(AFTER)
    finally:
        if comeback:  # aborted while the old primary was away: never leave it frozen
            comeback()
        lab.heal_all()  # and never leave a fault in place for the next run
        for w in writers.values():
            w.stop()
        t_end = time.monotonic()
        for r in roles.values():
            r.stop()
        if verdicts:
            verdicts.stop()
        watch.stop()
    t0p, t0 = watch.switch(old, t_fault)  # (None, None) when it never moved (a steady scenario)
    run.update(new=new, t_manager_s=round(t0 - t_fault, 2) if t0 else None,
               t0_uncertainty_s=round(t0 - t0p, 2) if t0 else None, steady=steady,
               manager_moved=t0 is not None,
               manager_reverted=watch.reverted(old, t_fault), repaired=lab.repairs[repairs_before:],
               comeback_s=round(comeback_at - t_fault, 2) if comeback_at else None,
               role_samples={n: len(r.samples) for n, r in roles.items()},
               role_silent={n: sum(1 for x in r.samples if x[2] is None) for n, r in roles.items()},
               manager_timeline=changes(watch.samples, t_fault),
               role_timeline={n: changes(r.samples, t_fault) for n, r in roles.items()})
    ctx = dict(run=run, old=old, new=new, t_fault=t_fault, comeback_at=comeback_at, t_start=t_start,
               t_end=t_end,
               offset=(offset_before + wall_offset()) / 2, manager=L.ManagerView(watch.samples),
               roles={n: L.Series(r.samples) for n, r in roles.items()}, verdicts=verdicts)
    # Every configuration's write backend over the run, for losses no router had reacted to yet.
    ctx["server_of"] = {v.key: {n: lab.server_name(v, n) for n in lab.node_names()} for v in lab.variants}
    ctx["settings"] = {v.key: v.settings for v in lab.variants}
    ctx["up"] = {v.key: L.UpTimeline([(tw - ctx["offset"], srv, st) for tw, srv, st in
                                      lab.haproxies[v.key].state_events(v.backend)],
                                     ctx["server_of"][v.key].values())
                 for v in lab.variants}
    rows = [dict(run, **judge(lab, v, writers[v.key], ctx)) for v in lab.variants]
    for r in rows:
        r["gate"] = gate_failures(rows, lab.variants, r["variant"])
    return rows


def changes(samples, t_fault):
    """[[s after the fault, value]] at each change of a watch's samples (for reading a run's
    timeline beside its losses; sent times)."""
    out, last = [], object()
    for ts, _, value in samples:
        if value != last:
            out.append([round(ts - t_fault, 3), value])
            last = value
    return out


def judge(lab, v, writer, ctx):
    """Per-variant figures of one run (see bench/failover/losses.py for the classes of loss)."""
    stored = lab.stored(v, ctx["new"])
    names = {lab.node_port(n): n for n in lab.node_names()}
    lost = [(t, wid, node) for t, wid, node in writer.acks if wid not in stored]
    cls = dict.fromkeys(L.CLASSES, 0)
    routing_after = []  # for each routing loss: s after the manager last named its node
    routing_detail = []  # for each routing loss: [s after the fault, node, class]
    # The configurations the gate compares this one with: the same detection settings.
    group = {k: tl for k, tl in ctx["up"].items() if ctx["settings"][k] == v.settings}
    for t, _, port in lost:
        c = L.classify(names.get(port), t, ctx["manager"], ctx["roles"], v.bound,
                       lambda node, at: L.behind_every_router(node, at, group, ctx["server_of"]))
        cls[c] += 1
        if c in L.ROUTING:
            routing_after.append(t - ctx["manager"].last_named_before(names.get(port), t))
            routing_detail.append([round(t - ctx["t_fault"], 3), names.get(port), c])
    t_fault, comeback_at = ctx["t_fault"], ctx["comeback_at"]
    after_comeback = sum(1 for t, _, _ in lost if comeback_at and t >= comeback_at)
    first_err = next((t for t, _ in writer.errors if t >= t_fault), None)
    new_port = lab.node_port(ctx["new"])
    first_new = next((t for t, _, node in writer.acks if node == new_port and t >= (first_err or t_fault)),
                     None)
    first_bad = min([t for t in (first_err, next((t for t, _, _ in lost if t >= t_fault), None))
                     if t is not None],
                    default=None)
    first_kept = next((t for t, wid, node in writer.acks
                       if node == new_port and wid in stored and first_bad and t >= first_bad), None)
    # Two writers UP, from HAProxy's own state lines (its clock turned into ours).
    h, offset = lab.haproxies[v.key], ctx["offset"]
    servers = [lab.server_name(v, n) for n in lab.node_names()]
    events = [(tw - offset, srv, st) for tw, srv, st in h.state_events(v.backend)]
    at_start, intervals = L.up_intervals(events, servers, ctx["t_start"], ctx["t_end"])
    row = {
        "variant": v.key, "label": v.label, "settings": v.settings, "dbcheck": v.dbcheck,
        "bound_s": round(v.bound, 2),
        "acked": len(writer.acks), "errors": len(writer.errors), "lost": len(lost),
        **{f"lost_{k}": n for k, n in cls.items()},
        "lost_routing": sum(cls[k] for k in L.ROUTING),
        "routing_after_s": [round(min(routing_after), 3), round(statistics.median(routing_after), 3),
                            round(max(routing_after), 3)] if routing_after else None,
        "lost_after_comeback": after_comeback,
        "error_window_s": (round(first_new - first_err, 2) if first_err and first_new
                           else (0.0 if not first_err else None)),
        "kept_window_s": (round(first_kept - first_bad, 2) if first_bad and first_kept
                          else (0.0 if not first_bad else None)),
        "two_up_s": round(sum(b - a for a, b in intervals), 3),
        "two_up_intervals": [[round(a - t_fault, 3), round(b - t_fault, 3)] for a, b in intervals],
        "log_agrees": at_start == [lab.server_name(v, ctx["old"])],
        "first_errors": sorted({m for _, m in writer.errors})[:3],
        # For reading a run: each routing loss, this HAProxy's state lines, the writer's pace.
        "routing_detail": routing_detail[:40],
        "state_lines": [[round(t - t_fault, 3), srv, st] for t, srv, st in events
                        if t_fault - 1 <= t <= ctx["t_end"]][:40],
        "acks_per_s_before": round(sum(1 for t, _, _ in writer.acks if t_fault - 5 <= t < t_fault) / 5),
    }
    row["gate_window_s"] = row[lab.window_field]
    # The longest time without a kept write from the fault to the end, and from the heal to the
    # first kept write: the measures of the steady scenarios' rules (Lab.window_rule).
    kept = [t for t, wid, _ in writer.acks if wid in stored and t_fault <= t <= ctx["t_end"]]
    edges = [t_fault, *kept, ctx["t_end"]]
    row["max_gap_s"] = round(max(b - a for a, b in zip(edges, edges[1:])), 2)
    after_heal = next((t for t in kept if comeback_at and t >= comeback_at), None)
    row["recovery_s"] = round(after_heal - comeback_at, 2) if after_heal and comeback_at else None
    row["window_rule"], row["recovery_vs"] = (lab.window_rule(ctx["run"]["scenario"], v) if v.dbcheck
                                              else ("", None))
    row.update(lab.reader_figures(v, h, ctx, ctx["run"]))
    if v.dbcheck:  # why the new primary was not (yet) UP: HAProxy's check lines and dbcheck's verdicts
        lo, hi = first_err or t_fault, first_new or ctx["t_end"]
        new_server = lab.server_name(v, ctx["new"])
        row["new_primary_checks"] = [f"{t - offset - t_fault:+.3f}s {kind} check {text}"
                                     for t, srv, kind, text in h.check_events(v.backend)
                                     if srv == new_server and lo - 1 <= t - offset <= hi]
        if v.key == "c" and ctx["verdicts"]:
            row["new_primary_verdicts"] = [f"{t - t_fault:+.3f}s exit {rc}: {line}" for t, rc, line in
                                           ctx["verdicts"].during(lab.node_addrs()[ctx["new"]], lo, hi)]
    return row


WINDOW_SLACK = 1.0  # seconds a dbcheck median error window may exceed every anchor's median
# Per run, one check interval more for each end: a window runs from a configuration's own first
# failed write to its own first write on the new primary, and where each HAProxy's 1 s check
# schedule falls against the fault moves its start, and against the promotion its end, each by
# up to an interval. Measured: Patroni's own check (a) held to the bare 1 s against the other
# anchors failed it in 2 of 34 runs, (b) in 4 of 34; with one interval, over 260 runs (9f28bf8,
# 4f289a8), the unchanged external check (c) failed it once, by 0.06 s (it took the old leader
# out 0.8 s before (a) and its first pass fell 0.9 s after the promotion), and the anchors held
# to it against one another failed 42 of 1,040 times.
PHASE_SLACK = 2 * V.INTER


def windowed(r):
    """True when the row's window is judged against every anchor's (Lab.window_rule 'window')."""
    return r.get("window_rule", "window") == "window"


def gate_window(r):
    """The window a row is judged by (the lab's window_field; error_window_s in rows without one)."""
    return r.get("gate_window_s", r["error_window_s"])


def gate_failures(rows, variants, key):
    """Why variant `key` fails the per-run part of the gate in this run ([] when it passes, and
    for anchors): a late loss, any time with two writers UP (or a log that disagrees with
    `show stat`), or an error window more than WINDOW_SLACK + PHASE_SLACK longer than every anchor's in the
    run (all of them: at the external and at the agent example's settings); in a no-outage scenario
    (a fault that leaves the primary in place), an error window NO_OUTAGE_SLACK or more longer than
    the shortest anchor's."""
    by_key = {r["variant"]: r for r in rows}
    v = next(x for x in variants if x.key == key)
    if not v.dbcheck:
        return []
    r = by_key[key]
    anchors = [by_key[a.key] for a in variants if not a.dbcheck]
    out = []
    if r["lost_late"]:
        out.append(f"{r['lost_late']} late")
    if r["two_up_s"] > 0:
        out.append(f"two writers UP for {r['two_up_s']:.3f} s")
    if not r["log_agrees"]:
        out.append("HAProxy's log and `show stat` disagree at the start")
    known = [gate_window(a) for a in anchors if gate_window(a) is not None]
    w = gate_window(r)
    if r.get("reader_bound_s") is not None and (r["reader_out_s"] is None
                                                or r["reader_out_s"] > r["reader_bound_s"]):
        took = "never" if r["reader_out_s"] is None else f"after {r['reader_out_s']:.2f} s"
        out.append(f"the cut replica left the read backend {took}, over its documented bound of "
                   f"{r['reader_bound_s']:.2f} s")
    rule = r.get("window_rule", "window")
    if rule == "no_outage":
        best = min((a["max_gap_s"] for a in anchors), default=0.0)
        if r["max_gap_s"] >= best + NO_OUTAGE_SLACK:
            out.append(f"a fault that leaves the primary in place: {r['max_gap_s']:.2f} s without a kept "
                       f"write where the steadiest anchor's longest gap was {best:.2f} s (a second or more "
                       "without a writer caused by this check)")
    elif rule == "recovery":
        theirs = {k: by_key[k]["recovery_s"] for k in r["recovery_vs"]}
        mine = r["recovery_s"]
        known_r = [x for x in theirs.values() if x is not None]
        if known_r and (mine is None or mine > max(known_r) + WINDOW_SLACK + PHASE_SLACK):
            out.append(f"back {'never' if mine is None else f'{mine:.2f} s'} after the heal, > "
                       f"{WINDOW_SLACK + PHASE_SLACK:.0f} s after the check on the same path ("
                       + ", ".join(f"{k}: {x}" for k, x in theirs.items()) + ")")
    elif known and (w is None or w > max(known) + WINDOW_SLACK + PHASE_SLACK):
        out.append(f"window {'never closed' if w is None else f'{w:.2f} s'} > "
                   f"{WINDOW_SLACK + PHASE_SLACK:.0f} s longer than every anchor's "
                   "(" + ", ".join(f"{a['variant']}: {gate_window(a)}" for a in anchors) + ")")
    return out


NO_OUTAGE_SLACK = 1.0  # in a no-outage scenario, seconds without a writer beyond the best anchor's that fail
CHANCE_P = 0.01  # a dbcheck excess over the lowest anchor this likely by chance passes


def excess_p(mine, lowest):
    """P(X >= mine) for X ~ Binomial(mine + lowest, 1/2): how likely a split at least this uneven
    is when both configurations lose writes at the same rate. Exact; small counts only matter
    (at thousands any real excess is far below CHANCE_P)."""
    n = mine + lowest
    if mine <= lowest:
        return 1.0
    if n > 1000:  # the normal approximation is exact enough there, and cheap
        z = (mine - 0.5 - n / 2) / math.sqrt(n / 4)
        return 0.5 * math.erfc(z / math.sqrt(2))
    return sum(math.comb(n, k) for k in range(mine, n + 1)) / 2 ** n


def routing_gate(rows, variants):
    """{(engine, scenario): [failure texts]}: a dbcheck variant whose routing losses, summed over
    the scenario's runs in this invocation, exceed those of the lowest anchor at its own
    detection settings (summed alike) by more than chance explains. Summed, because per run a
    handful of writes either way is the phase of the checks against the fault, not the rule;
    tested, because 2 writes against 1 is a coin toss (the write in flight at the promotion,
    which every configuration loses in some runs), while 7 against 0 is not (p < 0.01)."""
    out = {}
    totals = {}
    for r in rows:
        k = (r["engine"], r["scenario"])
        totals.setdefault(k, {}).setdefault(r["variant"], 0)
        totals[k][r["variant"]] += r["lost_routing"]
    for k, per in totals.items():
        out[k] = []
        for v in variants.get(k[0], []):
            if not v.dbcheck or v.key not in per:
                continue
            anchors = {a.key: per[a.key] for a in V.anchors_of(variants[k[0]], v) if a.key in per}
            if not anchors:
                continue
            lowest = min(anchors.values())
            p = excess_p(per[v.key], lowest)
            if p < CHANCE_P:
                out[k].append(f"({v.key}): routing losses {per[v.key]} > lowest anchor's {lowest}, "
                              f"p = {p:.2g} by "
                              "chance (" + ", ".join(f"{a}: {n}" for a, n in anchors.items()) + ")")
    return out


# ------------------------------------------------------------------ the table
SCENARIO_TEXT = {
    ("pg", "switchover"): "planned: `patronictl switchover`",
    ("pg", "freeze"): "unplanned: leader host frozen (SIGSTOP Patroni + PostgreSQL), back after the switch",
    ("pg", "patroni-dies"): "unplanned: Patroni killed on the leader, its PostgreSQL keeps running as "
                            "primary; Patroni restarted after the switch",
    ("redis", "failover"): "planned: `SENTINEL FAILOVER`",
    ("redis", "dbcheck-switchover"): "planned: `dbcheck switchover` (pause, failover, demote, unpause)",
    ("pg", "dbcheck-switchover"): "planned: `dbcheck switchover` (Patroni's POST /switchover, "
                                  "then agreement)",
    ("redis", "freeze"): "unplanned: master frozen (SIGSTOP), back after the switch",
    ("redis", "failover+fencing"): "planned, with `min-replicas-to-write 1`, `min-replicas-max-lag 1`",
    ("redis", "freeze+fencing"): "unplanned, with `min-replicas-to-write 1`, `min-replicas-max-lag 1`",
}


def _fmt_window(values):
    vals = [x for x in values if x is not None]
    if not vals:
        return "never"
    missing = len(values) - len(vals)
    text = f"{statistics.median(vals):.1f} / {max(vals):.1f}"
    return text + (f" ({missing} never)" if missing else "")


def _keys(rows, *fields):
    """The distinct values of `fields` in rows, in first-seen order."""
    out = []
    for r in rows:
        k = tuple(r[f] for f in fields)
        if k not in out:
            out.append(k)
    return out


def window_gate(rows, variants):
    """{(engine, scenario): [failure texts]}: a dbcheck variant whose median window over the
    scenario's runs in this invocation is more than WINDOW_SLACK longer than every anchor's
    median (a window that never closed counts as infinitely long); where its rule is 'recovery'
    (Lab.window_rule), its median time from the heal to its first kept write against the same
    path's anchors'. The median, because one run's window is the phase of the checks against the
    fault as much as the rule (PHASE_SLACK). A 'no_outage' rule is judged per run only."""
    inf = float("inf")
    per, rec, rules = {}, {}, {}
    for r in rows:
        k = (r["engine"], r["scenario"])
        w, back = gate_window(r), r.get("recovery_s")
        per.setdefault(k, {}).setdefault(r["variant"], []).append(inf if w is None else w)
        rec.setdefault(k, {}).setdefault(r["variant"], []).append(inf if back is None else back)
        rules[(*k, r["variant"])] = (r.get("window_rule", "window"), r.get("recovery_vs"))
    out = {}
    for k, windows in per.items():
        out[k] = []
        medians = {v: statistics.median(ws) for v, ws in windows.items()}
        anchors = {v.key: medians[v.key] for v in variants.get(k[0], [])
                   if not v.dbcheck and v.key in medians}
        if not anchors:
            continue
        for v in variants.get(k[0], []):
            if not v.dbcheck or v.key not in medians:
                continue
            rule, vs = rules[(*k, v.key)]
            if rule == "window" and medians[v.key] > max(anchors.values()) + WINDOW_SLACK:
                out[k].append(f"({v.key}): median window {medians[v.key]:.2f} s > {WINDOW_SLACK:.0f} s "
                              "longer than every anchor's median ("
                              + ", ".join(f"{a}: {m:.2f}" for a, m in anchors.items()) + ")")
            elif rule == "recovery":
                mine = statistics.median(rec[k][v.key])
                theirs = {a: statistics.median(rec[k][a]) for a in vs if a in rec[k]}
                if theirs and mine > max(theirs.values()) + WINDOW_SLACK:
                    out[k].append(f"({v.key}): median time back after the heal {mine:.2f} s > "
                                  f"{WINDOW_SLACK:.0f} s longer than the same path's anchors' (" +
                                  ", ".join(f"{a}: {m:.2f}" for a, m in theirs.items()) + ")")
    return out


def gate_verdicts(rows, failed, variants):
    """{(engine, scenario): [failure texts]} for every scenario run (empty: it passes): the
    per-run gate of every run, and the routing gate over the scenario's runs. `variants`:
    {engine: [Variant]}."""
    out = {k: [] for k in _keys(rows, "engine", "scenario")}
    for r in rows:
        for why in r.get("gate", []):
            out[(r["engine"], r["scenario"])].append(f"#{r['rep']} ({r['variant']}): {why}")
    for k, why in routing_gate(rows, variants).items():
        out[k] += why
    for k, why in window_gate(rows, variants).items():
        out[k] += why
    for engine, scenario, rep in failed:
        out.setdefault((engine, scenario), []).append(f"#{rep}: the run itself failed twice")
    return out


def table(rows, reps, command, variants, failed=(), title="Failover proof: writes through HAProxy",
          window_field="error_window_s"):
    """The Markdown section for docs/results.md from all per-variant rows."""
    out = [
        f"## {title}",
        "",
        f"Command: `{command}` ({reps} run(s) of each scenario; "
        "every run drives the six HAProxy configurations of an engine at once, against one cluster).",
        "",
        "A writer per configuration sends numbered writes back to back (PostgreSQL: autocommit "
        "`INSERT`; Redis: `RPUSH`) through the configuration's write frontend. Acknowledged ids "
        "missing from the final primary are **lost**. Beside the writers the harness samples every "
        "100 ms the manager's choice of primary (etcd's leader key; a strict majority of the "
        "Sentinels whose answer is settled, dbcheck's own rule) and every node's own role "
        "(`pg_is_in_recovery()`; `ROLE`). A lost write acknowledged by node X at t is **by the "
        "manager's primary** when the manager named X in the samples on both sides of t and no "
        "other node may have been a primary (asynchronous replication at a promotion), "
        "**manager reversal** when, in addition, the manager later went back to a node it had named "
        "before X (Patroni 3.0.2 re-putting an old leader key): no router following the manager "
        "avoids either. **At the manager's change** when the manager's sample before t named X and "
        "the sample after t did not: whether it still named X at t is not known to better than "
        "100 ms (no check reacts that fast). Every other loss is a **routing** loss: **late** when "
        "acknowledged more than "
        "the configuration's detection bound B after the manager last named X; else **behind every "
        "router** when every configuration of the run at the same detection settings (the three the gate "
        "compares) still had X UP at t by their own HAProxy "
        "logs (no router at these settings had reacted yet: not counted as routing, shown in its "
        "own column); else **two-writer** when "
        "another node may have been a primary at t (its role samples on either side of t say so), "
        "else **within B**. "
        "B = inter + fall·t + (fall−1)·inter for HAProxy checks (t = `timeout check` 1 s, or "
        "dbcheck's 0.8 s), and interval + t + agent-inter = "
        f"{V.AGENT_BOUND:.2f} s for dbcheck-agent. (a), (b), (c) run at inter 1 s, fall 2, rise 3 "
        "(the external-check example); (a1), (b1), (d) at inter 1 s, fall 1, rise 1 (the agent "
        "example). Error window: first failed write to first write acknowledged by the new primary "
        "(median / max s); without a kept write: from the first write that failed *or was lost* to the first "
        "write the new primary acknowledged and kept (where an old primary that HAProxy still reaches "
        "acknowledges writes that are then lost, the error window flatters the check that keeps routing to "
        "it). The gate compares "
        f"{'the time without a kept write' if window_field == 'kept_window_s' else 'error windows'}. Two "
        "writers UP: seconds during which HAProxy had two or more servers UP in the write backend, from "
        "its own `Server … is UP/DOWN` log lines (microsecond timestamps).",
        "",
        "| engine | scenario | configuration | settings | B (s) | acked | lost: total | by the manager's "
        "primary | manager reversal | at the manager's change | behind every router | routing: two-writer | "
        "routing: within B | routing: **late** | **routing total** "
        "| error window (s) | without a kept write (s) | two writers UP (s) | runs with two UP "
        "| lost after old primary returned |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | "
        "--- | --- | --- | --- |",
    ]
    for eng, scen, var in _keys(rows, "engine", "scenario", "variant"):
        rs = [r for r in rows if (r["engine"], r["scenario"], r["variant"]) == (eng, scen, var)]
        s = lambda f: sum(r[f] for r in rs)  # noqa: E731
        out.append(
            f"| {eng} | {SCENARIO_TEXT[(eng, scen)]} ({len(rs)} runs) | ({var}) {rs[0]['label']} | "
            f"{rs[0]['settings']} | {rs[0]['bound_s']:.2f} | {s('acked')} | {s('lost')} | "
            f"{s('lost_manager')} | {s('lost_reversal')} | {s('lost_at_change')} | {s('lost_behind_all')} | "
            f"{s('lost_two_writer')} | {s('lost_within')} | **{s('lost_late')}** | **{s('lost_routing')}** | "
            f"{_fmt_window([r['error_window_s'] for r in rs])} | "
            f"{_fmt_window([r.get('kept_window_s') for r in rs])} | {s('two_up_s'):.2f} | "
            f"{sum(1 for r in rs if r['two_up_s'] > 0)} | {s('lost_after_comeback')} |")
    manager = {}
    for r in rows:
        if r["t_manager_s"] is not None:
            manager.setdefault((r["engine"], r["scenario"]), set()).add((r["rep"], r["t_manager_s"]))
    out += ["", "Time from the fault to the manager naming the new primary (median, s): " + "; ".join(
        f"{eng} {scen} {statistics.median(t for _, t in v):.1f}" for (eng, scen), v in manager.items()) + "."]
    readers = [k for k in _keys(rows, "engine", "scenario", "variant")
               if any(r.get("reader_bound_s") is not None
                      for r in rows if (r["engine"], r["scenario"], r["variant"]) == k)]
    if readers:
        def bound(key):
            """The documented bound of configuration `key` (engine, scenario, variant)."""
            return next(r["reader_bound_s"] for r in rows
                        if (r["engine"], r["scenario"], r["variant"]) == key and r.get("reader_bound_s"))
        out += ["", "The cut replica out of the read backend, from the cut, by the configuration's own "
                "HAProxy log (median / max s; its documented worst case: max_lag, then the check running at "
                "that moment and fall more, or for the agent lag_window and the rounds around "
                "it: docs/failover.md, 'Partitions'): " + "; ".join(
                    f"{e} {sc} ({var}) "
                    + _fmt_window([r["reader_out_s"] for r in rows
                                   if (r["engine"], r["scenario"], r["variant"]) == (e, sc, var)])
                    + f" (bound {bound((e, sc, var)):.1f})"
                    for e, sc, var in readers) + "."]
    moved = sorted({(r["engine"], r["scenario"], r["rep"]) for r in rows
                    if r.get("steady") and r.get("manager_moved")})
    if moved:
        out += ["", "Runs of a fault that should leave the primary in place where the manager moved it "
                "anyway: " + ", ".join(f"{e} {sc} #{n}" for e, sc, n in moved) + "."]
    reverted = sorted({(r["engine"], r["scenario"], r["rep"]) for r in rows if r.get("manager_reverted")})
    if reverted:
        out += ["", "Runs where the manager named the old primary again after naming a new one: "
                f"{len(reverted)} ({', '.join(f'{e} {s} #{n}' for e, s, n in reverted)}); see "
                "docs/failover.md."]
    repaired = sorted({(r["engine"], r["scenario"], r["rep"], tuple(r["repaired"])) for r in rows
                       if r.get("repaired")})
    if repaired:
        out += ["", "Runs after which a member could not rejoin by itself and was re-initialised from the "
                "leader (`patronictl reinit`): "
                + ", ".join(f"{e} {s} #{n} ({', '.join(m)})" for e, s, n, m in repaired) + "."]
    out += ["", "**Gate** (per scenario, for each dbcheck configuration): in every run no late loss, no time "
            f"with two writers UP, and an error window not more than {WINDOW_SLACK + PHASE_SLACK:.0f} s "
            "longer than every anchor's in that run (1 s, plus one check interval for each end of the "
            "window: where the checks' schedules fall against the fault and the promotion); over the "
            f"scenario's runs, a median error window not more than {WINDOW_SLACK:.0f} s longer than every "
            "anchor's median, and routing losses no more than the lowest anchor's at the configuration's "
            "own detection settings, beyond chance (an excess as uneven as it is has a probability under "
            f"{CHANCE_P} when both lose at the same rate: one-sided binomial test; 7 against 0 fails, 2 "
            "against 1 passes)."
            + (" Where the fault must leave the primary in place (a replica cut from its primary, a Sentinel "
               "minority cut off, and for dbcheck-agent HAProxy's host cut from the managers), a run fails "
               f"with a gap of {NO_OUTAGE_SLACK:.0f} s or more without a kept write beyond the steadiest "
               "anchor's longest; where a check must fail closed (the external check when HAProxy's host is "
               "cut from the managers), its time back after the heal is compared, per run and on the "
               "median, with the anchor that asks over the same path (Patroni's `GET /primary`; the seed "
               "check's Sentinel); a cut replica must leave each dbcheck configuration's read backend "
               "within its documented bound (bench/failover/partitions.py)."
               if any(r.get("steady") for r in rows) else ""), "",
            "| engine | scenario | gate | why |", "| --- | --- | --- | --- |"]
    for (eng, scen), why in gate_verdicts(rows, failed, variants).items():
        out.append(f"| {eng} | {scen} | {'**FAIL**' if why else 'pass'} | {'; '.join(why) if why else ''} |")
    return "\n".join(out)


def _brief(r):
    """One variant's figures of one run, for the progress line."""
    return (f"{r['variant']}: lost {r['lost']} (routing {r['lost_routing']}: late {r['lost_late']}, "
            f"2w {r['lost_two_writer']}; mgr {r['lost_manager']}, rev {r['lost_reversal']}, "
            f"chg {r['lost_at_change']}, all {r['lost_behind_all']}) "
            f"up2 {r['two_up_s']:.2f}s win {r['error_window_s']} kept-win {r['kept_window_s']}")


# ------------------------------------------------------------------ main
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=20, help="runs of each scenario (CI: 2)")
    ap.add_argument("--engine", choices=["pg", "redis"], action="append", help="default: both")
    ap.add_argument("--scenario", action="append", help="only these scenarios (default: all)")
    ap.add_argument("--no-results", action="store_true", help="do not rewrite docs/results.md")
    ap.add_argument("--no-reasons", action="store_true",
                    help="do not run `dbcheck check` every second beside HAProxy for the reasons of "
                         "failing checks")
    ap.add_argument("--section", help="docs/results.md section to rewrite (default: failover, or partitions "
                                      "with --lab net)")
    ap.add_argument("--peer", choices=sorted(PEERS),
                    help="the current peer instead of Debian's: patroni4 (Patroni 4.1.4, PostgreSQL only) or "
                         "valkey8 (Valkey 8.0.1, Redis only); section <section>-<peer>")
    ap.add_argument("--lab", choices=["loopback", "net"], default="loopback",
                    help="net: every host in a network namespace of its own, the partition scenarios "
                         "(bench/failover/partitions.py)")
    args = ap.parse_args()
    if args.peer:
        var, value, engine = PEERS[args.peer]
        if os.environ.get(var) != value:
            # The fixtures choose their binaries when imported (fixtures/peers.py): start over
            # with the peer chosen in the environment.
            os.environ[var] = value
            os.execv(sys.executable, [sys.executable, *sys.argv])
        if args.engine and args.engine != [engine]:
            ap.error(f"--peer {args.peer} is a {engine} peer")
        args.engine = [engine]
    labs = (PgLab, RedisLab)
    if args.lab == "net":
        import partitions  # noqa: E402 - needs this module loaded first
        labs = partitions.LABS
    args.section = args.section or ("partitions" if args.lab == "net" else "failover") + (
        f"-{args.peer}" if args.peer else "")
    # SIGTERM (and SIGINT, which a background job ignores) unwind through the finally blocks,
    # so a stopped run still thaws what it froze and stops every process it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
    OUT.mkdir(parents=True, exist_ok=True)
    log = OUT / "runs.jsonl"
    log.write_text("")
    rows, failed, variants = [], [], {}
    for lab_cls in labs:
        if args.engine and lab_cls.engine not in args.engine:
            continue
        workdir = Path(tempfile.mkdtemp(prefix=f"dbcheck-failover-{lab_cls.engine}."))
        workdir.chmod(0o755)
        lab = lab_cls(workdir)
        t_lab = time.monotonic()
        try:
            lab.start()
            variants[lab.engine] = lab.variants
            print(f"[failover] {lab.engine} lab up in {time.monotonic() - t_lab:.0f}s ({workdir})",
                  flush=True)
            for rep in range(1, args.reps + 1):
                for scen in lab.scenarios:
                    if args.scenario and scen not in args.scenario:
                        continue
                    t = time.monotonic()
                    got = None
                    for attempt in (1, 2):  # a lab hiccup (not a verdict) gets one more try
                        try:
                            got = run_scenario(lab, scen, rep, reasons=not args.no_reasons)
                            break
                        except Exception:  # noqa: BLE001 - report, then retry or go on
                            print(f"[failover] {lab.engine} {scen} #{rep} attempt {attempt} FAILED:\n"
                                  f"{traceback.format_exc()}", flush=True)
                    if got is None:
                        failed.append((lab.engine, scen, rep))
                        continue
                    rows += got
                    with log.open("a") as f:
                        for r in got:
                            f.write(json.dumps(r) + "\n")
                    print(f"[failover] {lab.engine} {scen} #{rep} ({time.monotonic() - t:.0f}s, manager "
                          f"+{got[0]['t_manager_s']}s, new {got[0]['new']}):\n    " +
                          "\n    ".join(_brief(r) for r in got), flush=True)
                    for r in got:
                        for why in r["gate"]:
                            print(f"[failover] GATE {lab.engine} {scen} #{rep} "
                                  f"({r['variant']}): {why}", flush=True)
                        if r["gate"]:
                            for line in r.get("new_primary_checks", []) + r.get("new_primary_verdicts", []):
                                print(f"      {line}", flush=True)
        finally:
            lab.stop()
    if not rows:
        print("[failover] no run completed", file=sys.stderr)
        return 1
    command = " ".join(["bench/failover/run", *sys.argv[1:]])
    title = {"failover": "Failover proof: writes through HAProxy",
             "partitions": "Partition proof: writes through HAProxy, hosts in network namespaces"}.get(
        args.section.removesuffix(f"-{args.peer}"), "Planned switchover proof: writes through HAProxy")
    if args.peer:
        title += f", on {peers.describe_engine(PEERS[args.peer][2])}"
    text = table(rows, args.reps, command, variants, failed, title, labs[0].window_field)
    print(text)
    if not args.no_results:
        results.write_section(args.section, text)
    verdicts = gate_verdicts(rows, failed, variants)
    for (eng, scen), why in verdicts.items():
        print(f"[failover] gate {eng} {scen}: {'FAIL' if why else 'pass'}", file=sys.stderr)
    return 1 if any(verdicts.values()) else 0


if __name__ == "__main__":
    # bench/failover/partitions.py imports this module by name: one module, not a second copy.
    sys.modules.setdefault("failover", sys.modules["__main__"])
    sys.exit(main())
