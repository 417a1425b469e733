"""Failover proof: numbered writes through HAProxy while the primary changes, side by side for
four HAProxy configurations watching the same cluster at the same time.

For each engine one real lab is started (PostgreSQL: etcd + 3 Patroni members; Redis: 2 nodes
+ 3 Sentinels) with four HAProxy processes in front of it (bench/failover/variants.py), one
writer client per HAProxy (tests/integration/fixtures/writers.py), HAProxy's write backend sampled every
100 ms, and the cluster manager's choice of primary sampled every 100 ms. Each scenario run:
writes start, the fault is injected, the manager names a new primary (T0), the old primary
comes back where the scenario says so, the cluster settles, writes stop, and every
acknowledged id is looked up on the final primary.

A lost write is classified by the node that acknowledged it and the time t it did: `manager`
when the manager named that very node as primary at t (in the samples just before and after
t): asynchronous replication at a promotion, or the manager itself later discarding that
node's timeline -- no router can help; otherwise it is a routing loss, `within` when t is at
most the variant's detection bound B after the manager's last sample naming that node (a
conservative "stopped being primary" time), `late` after that.

  /usr/bin/python3 bench/failover/failover.py [--reps N] [--engine pg|redis] [--scenario S]
Results: a JSON line per (run, variant) in build/failover/runs.jsonl and the Markdown table
in docs/results.md (section "failover").
"""

import argparse
import base64
import json
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

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import results  # noqa: E402
import variants as V  # noqa: E402
from fixtures import redis as redis_fx  # noqa: E402
from fixtures.agent import start_pg_agents, start_redis_agents  # noqa: E402
from fixtures.dbcheck import operator_lines, write_check_wrapper, write_dbcheck_config, write_redis_config  # noqa: E402
from fixtures.haproxy import HAProxy  # noqa: E402
from fixtures.patroni import APP_DB, APP_PASSWORD, APP_USER, PatroniCluster  # noqa: E402
from fixtures.periodic import Periodic  # noqa: E402
from fixtures.procs import wait_until  # noqa: E402
from fixtures.sampler import Sampler  # noqa: E402
from fixtures.writers import PgWriter, RedisWriter  # noqa: E402

DBCHECK = REPO / "build" / "external-check" / "dbcheck"
AGENT = REPO / "build" / "agent" / "dbcheck-agent"
OUT = REPO / "build" / "failover"
WARMUP, AFTER = 1.5, 2.0  # seconds of writes before the fault and after everything settled
HOLD = 4.0  # seconds the old primary stays away after the manager named a new one
_http = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ManagerWatch(Periodic):
    """Samples the manager's primary (a name/address or None) every 100 ms: [(t, primary)]."""

    def __init__(self, ask):
        super().__init__("manager-watch", 0.1, max_seconds=900)
        self.ask, self.samples = ask, []

    def tick(self):
        try:
            self.samples.append((time.monotonic(), self.ask()))
        except Exception:  # noqa: BLE001 - an unreachable manager names nobody
            self.samples.append((time.monotonic(), None))

    def naming_since(self, node, t):
        """None when the manager's latest sample at or before t named `node`; else the time of
        the last sample before t that named it (the moment it stopped being the manager's
        primary, conservatively), or the first sample's time when none did."""
        last_named, latest, following = None, None, None
        for ts, p in self.samples:
            if ts > t:
                following = p
                break
            latest = p
            if p == node:
                last_named = ts
        if node is not None and latest == node and following in (node, None):
            return None  # named both before and after the acknowledgement
        return last_named if last_named is not None else (self.samples[0][0] if self.samples else t)

    def reverted(self, old, since):
        """True when the manager named `old` again after having named another primary."""
        t0p, t0 = self.switch(old, since)
        return bool(t0) and any(ts > t0 and p == old for ts, p in self.samples)

    def switch(self, old, since):
        """(T0', T0): the last sample at/after `since` naming `old` and the first one after it
        naming another primary; (None, None) when the manager never named another."""
        last_old = since
        for t, p in self.samples:
            if t < since:
                continue
            if p == old:
                last_old = t
            elif p is not None:
                return last_old, t
        return None, None


def _signal(pid, sig):
    """os.kill that ignores a process gone meanwhile (a backend that was already exiting)."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


# ------------------------------------------------------------------ labs
class Lab:
    """What both engines' labs share: one HAProxy per variant, the agents, the cluster."""

    def start_haproxies(self):
        """Start one HAProxy per variant, each in its own directory."""
        for v in self.variants:
            self.haproxies[v.key] = HAProxy(self.workdir / v.key, v.cfg).start()

    def stop(self):
        """Stop the HAProxies, the agents and the cluster (each by its PIDs)."""
        for h in self.haproxies.values():
            h.stop()
        for a in self.agents:
            a.stop()
        self.cluster.stop()


class PgLab(Lab):
    """A Patroni cluster with the four PostgreSQL variants in front of it."""

    engine = "pg"
    scenarios = ("switchover", "dbcheck-switchover", "freeze", "patroni-dies")

    def __init__(self, workdir):
        self.workdir = workdir
        self.cluster = PatroniCluster(workdir / "cluster")
        self.haproxies, self.agents, self.variants = {}, [], []
        self.repairs = []  # members re-initialised by settle()

    def start(self):
        self.cluster.start()
        cfg = write_dbcheck_config(self.workdir / "dbcheck", self.cluster)
        wrapper = write_check_wrapper(self.workdir / "dbcheck" / "dbcheck-wrapper", DBCHECK, cfg)
        # `dbcheck switchover` runs as the operator (root here), from its own config.
        self.op_config = write_dbcheck_config(self.workdir / "dbcheck-op", self.cluster, owner=None)
        self.agents = start_pg_agents(self.workdir / "agents", self.cluster, AGENT)
        self.variants = [V.pg_patroni_httpchk(self.cluster, self.workdir), V.pg_node_only(self.cluster, self.workdir),
                         V.pg_dbcheck(self.cluster, self.workdir, wrapper),
                         V.pg_agent(self.cluster, self.workdir, self.agents)]
        self.start_haproxies()
        with self.cluster.superuser_conn(self.cluster.wait_healthy()) as conn, conn.cursor() as cur:
            for v in self.variants:
                cur.execute(f"CREATE TABLE IF NOT EXISTS proof_{v.key} (id bigint PRIMARY KEY)")
                cur.execute(f"ALTER TABLE proof_{v.key} OWNER TO {APP_USER}")
        return self

    def primary(self):
        """The leader key in etcd (etcd v3 JSON gateway): the member name, or None."""
        key = f"/service/{self.cluster.scope}/leader".encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.cluster.etcd_port}/v3/kv/range",
                                     data=json.dumps({"key": base64.b64encode(key).decode()}).encode())
        with _http.open(req, timeout=0.5) as resp:
            kvs = json.loads(resp.read()).get("kvs") or []
        return base64.b64decode(kvs[0]["value"]).decode() if kvs else None

    def node_port(self, name):
        return self.cluster.member(name).pg_port

    def node_names(self):
        return [m.name for m in self.cluster.members()]

    def server_name(self, v, name):
        return name

    def settle(self, not_master=None):
        """The leader once every member streams from it (`not_master` is not enforced: Patroni
        may rightly hand leadership back to the old leader, see docs/failover.md). A member left on a timeline the
        leader does not have (after the manager took the key back from it; Patroni 3.0.2 does
        not always rewind it) is re-initialised from the leader, as an operator would, and
        noted in self.repairs."""
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
        first, leader = self.cluster.members()[0], self.cluster.member(self.settle())
        if leader != first:
            self.cluster.switchover(first.name, leader=leader.name)
            wait_until(lambda: self.cluster.wait_healthy(120) == first, 120, f"{first.name} leading")

    def prepare(self, v):
        with self.cluster.superuser_conn(self.cluster.leader()) as conn, conn.cursor() as cur:
            cur.execute(f"TRUNCATE proof_{v.key}")

    def writer(self, v):
        return PgWriter(v.key, v.write_port, f"proof_{v.key}", APP_USER, APP_PASSWORD, APP_DB)

    def stored(self, v, primary):
        with self.cluster.superuser_conn(primary) as conn, conn.cursor() as cur:
            cur.execute(f"SELECT id FROM proof_{v.key}")
            return {r[0] for r in cur.fetchall()}

    def inject(self, scenario, old, run):
        """Start the fault; returns a callable bringing the old primary back (or None)."""
        m = self.cluster.member(old)
        if scenario == "switchover":
            candidate = next(x for x in self.cluster.members() if x.name != old)
            self.cluster.switchover(candidate.name, leader=old)
            return None
        if scenario == "dbcheck-switchover":
            candidate = next(x for x in self.cluster.members() if x.name != old)
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
    scenarios = ("failover", "dbcheck-switchover", "freeze", "failover+fencing", "freeze+fencing")

    def __init__(self, workdir):
        self.workdir = workdir
        self.cluster = redis_fx.RedisSentinelCluster(workdir / "cluster")
        self.haproxies, self.agents, self.variants = {}, [], []
        self.repairs = []

    def start(self):
        self.cluster.start()
        cfg = write_redis_config(self.workdir / "dbcheck", self.cluster)
        wrapper = write_check_wrapper(self.workdir / "dbcheck" / "dbcheck-wrapper", DBCHECK, cfg)
        self.op_config = write_redis_config(self.workdir / "dbcheck-op", self.cluster, owner=None,
                                            cluster_extra=operator_lines(self.workdir / "operator",
                                                                         redis_fx.OPERATOR_USER,
                                                                         redis_fx.OPERATOR_PASSWORD))
        self.agents = start_redis_agents(self.workdir / "agents", self.cluster, AGENT)
        self.variants = [V.redis_role_only(self.cluster, self.workdir), V.redis_seed_002(self.cluster, self.workdir),
                         V.redis_dbcheck(self.cluster, self.workdir, wrapper),
                         V.redis_agent(self.cluster, self.workdir, self.agents)]
        self.start_haproxies()
        return self

    def primary(self):
        m = self.cluster.master(timeout=0.3)
        return m.name if m else None

    def node_port(self, name):
        return self.cluster.get(name).port

    def node_names(self):
        return [n.name for n in self.cluster.nodes()]

    def server_name(self, v, name):
        return str(self.node_port(name)) if v.key == "b" else name

    def settle(self, not_master=None):
        return self.cluster.wait_stable(60, not_master=not_master).name

    def make_first_primary(self):
        """Fail over to redis1 (listed first in every variant) unless it is the master; then
        wait until every Sentinel lists the replica as healthy (a failover needs one)."""
        first, master = self.cluster.nodes()[0], self.cluster.wait_stable(60)
        if master != first:
            self.fencing(False)
            self.cluster.failover()
            self.cluster.wait_stable(60, not_master=master)
        self.cluster.wait_settled(60)

    def prepare(self, v):
        self.cluster.admin(self.cluster.wait_stable(), "DEL", f"proof:{v.key}")

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
    res = subprocess.run([str(DBCHECK), "--config", str(config), "switchover", cluster, *args], capture_output=True,
                         text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    if res.returncode != 0:
        raise RuntimeError(f"dbcheck switchover exited {res.returncode}:\n{res.stdout}{res.stderr}")
    return res.stdout.strip().splitlines()[-1]


# ------------------------------------------------------------------ one run
def routed_only(lab, v, name):
    """True when variant v's write backend has exactly node `name` UP."""
    return lab.haproxies[v.key].servers_up(v.backend) == [lab.server_name(v, name)]


def run_scenario(lab, scenario, rep):
    """One scenario run with every variant at once; returns a list of per-variant dicts.
    Every run starts with the first-listed server as primary: with `balance first` that is the
    server HAProxy prefers whenever it is UP, the worst case for a check that keeps the old
    primary UP (and the usual steady state of a hand-written server list)."""
    lab.make_first_primary()
    old = lab.settle()
    for v in lab.variants:
        lab.prepare(v)
    if isinstance(lab, RedisLab):
        lab.fencing(False)
    for v in lab.variants:  # every configuration starts from the same, correct routing
        wait_until(lambda v=v: routed_only(lab, v, old), 60, f"{v.key}: only {old} UP")
    run = {"engine": lab.engine, "scenario": scenario, "rep": rep, "old": old}
    repairs_before = len(lab.repairs)
    watch = ManagerWatch(lab.primary).start()
    samplers = {v.key: Sampler(lab.haproxies[v.key], v.backend).start() for v in lab.variants}
    writers = {v.key: lab.writer(v) for v in lab.variants}
    for w in writers.values():
        w.start()
    comeback_at, comeback = None, None
    try:
        time.sleep(WARMUP)  # steady writes before the fault (measured, not waited for)
        t_fault = time.monotonic()
        comeback = lab.inject(scenario, old, run)
        wait_until(lambda: watch.switch(old, t_fault)[1], 90, f"the manager naming a primary other than {old}")
        if comeback:
            time.sleep(HOLD)  # the old primary stays away a while after the switch
            comeback_at = time.monotonic()
            comeback, undo = None, comeback
            undo()
        new = lab.settle(not_master=old)
        for v in lab.variants:  # bounded: a naive variant may never route right, that is data
            try:
                wait_until(lambda v=v: routed_only(lab, v, new), 30, f"{v.key}: only {new} UP")
            except AssertionError:
                run.setdefault("unsettled", []).append(v.key)
        time.sleep(AFTER)
    finally:
        if comeback:  # aborted while the old primary was away: never leave it frozen
            comeback()
        for w in writers.values():
            w.stop()
        for s in samplers.values():
            s.stop()
        watch.stop()
    t0p, t0 = watch.switch(old, t_fault)
    run.update(new=new, t_manager_s=round(t0 - t_fault, 2), t0_uncertainty_s=round(t0 - t0p, 2),
               manager_reverted=watch.reverted(old, t_fault), repaired=lab.repairs[repairs_before:],
               comeback_s=round(comeback_at - t_fault, 2) if comeback_at else None)
    rows = []
    for v in lab.variants:
        rows.append(dict(run, **judge(lab, v, writers[v.key], samplers[v.key], watch, new, t_fault, comeback_at)))
    return rows


def judge(lab, v, writer, sampler, watch, new, t_fault, comeback_at):
    """Per-variant figures of one run (see the module docstring for the classes of loss)."""
    stored = lab.stored(v, new)
    names = {lab.node_port(n): n for n in lab.node_names()}
    cls = {"manager": 0, "within": 0, "late": 0}
    lost = [(t, wid, node) for t, wid, node in writer.acks if wid not in stored]
    for t, _, node in lost:
        named_since = watch.naming_since(names.get(node), t)
        if named_since is None:
            cls["manager"] += 1  # the manager named this very node when it acknowledged
        else:
            cls["within" if t - named_since <= v.bound else "late"] += 1
    after_comeback = sum(1 for t, _, _ in lost if comeback_at and t >= comeback_at)
    first_err = next((t for t, _ in writer.errors if t >= t_fault), None)
    new_port = lab.node_port(new)
    first_new = next((t for t, _, node in writer.acks if node == new_port and t >= (first_err or t_fault)), None)
    during = [up for t, up in sampler.samples if t >= t_fault]
    return {
        "variant": v.key, "label": v.label, "bound_s": round(v.bound, 2),
        "acked": len(writer.acks), "errors": len(writer.errors), "lost": len(lost),
        **{f"lost_{k}": n for k, n in cls.items()},
        "lost_after_comeback": after_comeback,
        "error_window_s": round(first_new - first_err, 2) if first_err and first_new else (0.0 if not first_err else None),
        "double_up": sum(1 for up in during if len(up) > 1), "samples": len(during),
        "sampler_errors": len(sampler.errors), "first_errors": sorted({m for _, m in writer.errors})[:3],
    }


# ------------------------------------------------------------------ the table
SCENARIO_TEXT = {
    ("pg", "switchover"): "planned: `patronictl switchover`",
    ("pg", "freeze"): "unplanned: leader host frozen (SIGSTOP Patroni + PostgreSQL), back after the switch",
    ("pg", "patroni-dies"): "unplanned: Patroni killed on the leader, its PostgreSQL keeps running as primary; "
                            "Patroni restarted after the switch",
    ("redis", "failover"): "planned: `SENTINEL FAILOVER`",
    ("redis", "dbcheck-switchover"): "planned: `dbcheck switchover` (pause, failover, demote, unpause)",
    ("pg", "dbcheck-switchover"): "planned: `dbcheck switchover` (Patroni's POST /switchover, then agreement)",
    ("redis", "freeze"): "unplanned: master frozen (SIGSTOP), back after the switch",
    ("redis", "failover+fencing"): "planned, with `min-replicas-to-write 1`, `min-replicas-max-lag 1`",
    ("redis", "freeze+fencing"): "unplanned, with `min-replicas-to-write 1`, `min-replicas-max-lag 1`",
}


def _fmt_window(values):
    vals = [x for x in values if x is not None]
    if not vals:
        return "n/a"
    missing = len(values) - len(vals)
    text = f"{statistics.median(vals):.1f} / {max(vals):.1f}"
    return text + (f" ({missing} never)" if missing else "")


def table(rows, reps, command, title="Failover proof: writes through HAProxy"):
    """The Markdown section for docs/results.md from all per-variant rows."""
    out = [
        f"## {title}",
        "",
        f"Command: `{command}` ({reps} run(s) of each scenario; "
        "every run drives the four HAProxy configurations of an engine at once, against one cluster).",
        "",
        "A writer per configuration sends numbered writes back to back (PostgreSQL: autocommit "
        "`INSERT`; Redis: `RPUSH`) through the configuration's write frontend. Acknowledged ids "
        "missing from the final primary are **lost**, and each is classified by who acknowledged it "
        "and when, against the manager's choice of primary (etcd's leader key; the Sentinel majority) "
        "sampled every 100 ms: **by the manager's primary** when the node was the manager's primary "
        "at that moment (asynchronous replication at a promotion, or the manager later discarding "
        "that node's history: no router can prevent these); otherwise a routing loss, **within B** "
        "when acknowledged at most the configuration's detection bound B after the manager last "
        "named that node, else **late**. "
        "B = inter + fall·t + (fall−1)·inter for HAProxy checks (inter 1 s, fall 2, rise 3 for every "
        "variant; t = `timeout check` 1 s, or dbcheck's 0.8 s), and interval + t + agent-inter = "
        f"{V.AGENT_BOUND:.1f} s for dbcheck-agent. "
        "Error window: first failed write to first write acknowledged by the new primary "
        "(median / max s). Double-UP: 100 ms samples of `show stat` with two writers UP.",
        "",
        "| engine | scenario | configuration | B (s) | acked | lost: total | by the manager's primary | "
        "routing, within B | routing, **late** | runs with late | lost after old primary returned | "
        "error window (s) | double-UP samples |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    keys = []
    for r in rows:
        k = (r["engine"], r["scenario"], r["variant"])
        if k not in keys:
            keys.append(k)
    for eng, scen, var in keys:
        rs = [r for r in rows if (r["engine"], r["scenario"], r["variant"]) == (eng, scen, var)]
        s = lambda f: sum(r[f] for r in rs)  # noqa: E731
        out.append(
            f"| {eng} | {SCENARIO_TEXT[(eng, scen)]} ({len(rs)} runs) | ({var}) {rs[0]['label']} | {rs[0]['bound_s']:.1f} | "
            f"{s('acked')} | {s('lost')} | {s('lost_manager')} | {s('lost_within')} | **{s('lost_late')}** | "
            f"{sum(1 for r in rs if r['lost_late'])} | {s('lost_after_comeback')} | "
            f"{_fmt_window([r['error_window_s'] for r in rs])} | {s('double_up')} of {s('samples')} |")
    manager = {}
    for r in rows:
        manager.setdefault((r["engine"], r["scenario"]), set()).add((r["rep"], r["t_manager_s"]))
    out += ["", "Time from the fault to the manager naming the new primary (median, s): " + "; ".join(
        f"{eng} {scen} {statistics.median(t for _, t in v):.1f}" for (eng, scen), v in manager.items()) + "."]
    reverted = sorted({(r["engine"], r["scenario"], r["rep"]) for r in rows if r.get("manager_reverted")})
    if reverted:
        out += ["", f"Runs where the manager named the old primary again after naming a new one: {len(reverted)} "
                f"({', '.join(f'{e} {s} #{n}' for e, s, n in reverted)}); see docs/failover.md."]
    repaired = sorted({(r["engine"], r["scenario"], r["rep"], tuple(r["repaired"])) for r in rows if r.get("repaired")})
    if repaired:
        out += ["", "Runs after which a member could not rejoin by itself and was re-initialised from the leader "
                "(`patronictl reinit`): " + ", ".join(f"{e} {s} #{n} ({', '.join(m)})" for e, s, n, m in repaired) + "."]
    return "\n".join(out)


# ------------------------------------------------------------------ main
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=20, help="runs of each scenario (CI: 2)")
    ap.add_argument("--engine", choices=["pg", "redis"], action="append", help="default: both")
    ap.add_argument("--scenario", action="append", help="only these scenarios (default: all)")
    ap.add_argument("--no-results", action="store_true", help="do not rewrite docs/results.md")
    ap.add_argument("--section", default="failover", help="docs/results.md section to rewrite (default failover)")
    args = ap.parse_args()
    # SIGTERM (and SIGINT, which a background job ignores) unwind through the finally blocks,
    # so a stopped run still thaws what it froze and stops every process it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
    OUT.mkdir(parents=True, exist_ok=True)
    log = OUT / "runs.jsonl"
    log.write_text("")
    rows, failed = [], []
    for lab_cls in (PgLab, RedisLab):
        if args.engine and lab_cls.engine not in args.engine:
            continue
        workdir = Path(tempfile.mkdtemp(prefix=f"dbcheck-failover-{lab_cls.engine}."))
        workdir.chmod(0o755)
        lab = lab_cls(workdir)
        t_lab = time.monotonic()
        try:
            lab.start()
            print(f"[failover] {lab.engine} lab up in {time.monotonic() - t_lab:.0f}s ({workdir})", flush=True)
            for rep in range(1, args.reps + 1):
                for scen in lab.scenarios:
                    if args.scenario and scen not in args.scenario:
                        continue
                    t = time.monotonic()
                    got = None
                    for attempt in (1, 2):  # a lab hiccup (not a verdict) gets one more try
                        try:
                            got = run_scenario(lab, scen, rep)
                            break
                        except Exception:  # noqa: BLE001 - report, then retry or go on
                            print(f"[failover] {lab.engine} {scen} #{rep} attempt {attempt} FAILED:\n"
                                  f"{traceback.format_exc()}", flush=True)
                    if got is None:
                        failed.append(f"{lab.engine} {scen} #{rep}")
                        continue
                    rows += got
                    with log.open("a") as f:
                        for r in got:
                            f.write(json.dumps(r) + "\n")
                    print(f"[failover] {lab.engine} {scen} #{rep} ({time.monotonic() - t:.0f}s, manager "
                          f"+{got[0]['t_manager_s']}s): " + "  ".join(
                              f"{r['variant']}: lost {r['lost']} (late {r['lost_late']}) dbl {r['double_up']} "
                              f"win {r['error_window_s']}" for r in got), flush=True)
        finally:
            lab.stop()
    if not rows:
        print("[failover] no run completed", file=sys.stderr)
        return 1
    command = " ".join(["bench/failover/run", *sys.argv[1:]])
    title = "Failover proof: writes through HAProxy" if args.section == "failover" else \
        "Planned switchover proof: writes through HAProxy"
    text = table(rows, args.reps, command, title)
    print(text)
    if not args.no_results:
        results.write_section(args.section, text)
    ours = [r for r in rows if r["variant"] in ("c", "d")]
    bad = [f"{r['engine']} {r['scenario']} #{r['rep']} ({r['variant']}): late {r['lost_late']}, double-UP "
           f"{r['double_up']}" for r in ours if r["lost_late"] or r["double_up"]]
    for b in bad:
        print(f"[failover] dbcheck broke its target: {b}", file=sys.stderr)
    for f in failed:
        print(f"[failover] run failed: {f}", file=sys.stderr)
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
