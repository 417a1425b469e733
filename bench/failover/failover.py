"""Failover proof: numbered writes through HAProxy while the primary changes, side by side for
six HAProxy configurations watching the same cluster at the same time.

For each engine one real lab is started (PostgreSQL: etcd + 3 Patroni members; Redis: 2 nodes
+ 3 Sentinels) with six HAProxy processes in front of it (bench/failover/variants.py: the two
anchors and dbcheck's external check at the external example's settings, the two anchors and
dbcheck-agent at the agent example's), one writer client per HAProxy
(lab/writers.py). Beside the writers, every 100 ms: the cluster
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

The proof's files: this one runs the scenarios and judges each run (main, run_scenario,
judge); labs.py the clusters with their HAProxies, agents and faults; partitions.py the same on
hosts in network namespaces; variants.py the six configurations; watches.py the samplers;
losses.py the loss classes; gates.py the gate; report.py the Markdown table.

  /usr/bin/python3 bench/failover/failover.py [--reps N] [--engine pg|redis] [--scenario S] [--tls]
Results: a JSON line per (run, variant) in build/failover/runs.jsonl and the Markdown table
in docs/results.md (section "failover").
"""  # noqa: E501 - the --help text, kept as it was

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

# The repository root (the lab package) is on PYTHONPATH: bench/failover/run and scripts/test source
# scripts/pythonpath, pytest reads setup.cfg; the modules beside this one are on sys.path as the
# script's own directory (pytest: the test module's).
import losses as L
import watches as W
from gates import MEDIAN_MIN_RUNS, gate_failures, gate_verdicts, timing_not_judged
from labs import AFTER, HOLD, OUT, STEADY_HOLD, WARMUP, PgLab, RedisLab
from report import TLS_NOTE, brief, table
from lab import peers, results
from lab.procs import wait_until

# --peer: the environment variable lab/peers.py reads, its value, and the engine it is for.
PEERS = {"patroni4": ("DBCHECK_PATRONI", "4", "pg"), "valkey8": ("DBCHECK_REDIS", "valkey", "redis")}


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


def run_scenario(lab, scenario, rep, reasons=True, judge_timing=True):
    """One scenario run with every variant at once; returns a list of per-variant dicts.
    Every run starts with the first-listed server as primary: with `balance first` that is the
    server HAProxy prefers whenever it is UP, the worst case for a check that keeps the old
    primary UP (and the usual steady state of a hand-written server list). judge_timing: as
    gates.gate_failures() takes it."""
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
        held = lab.held.get(scenario)
        if steady or held:
            # The primary must stay where it is, or the manager itself is away: measured, not waited for.
            time.sleep(held or STEADY_HOLD)
        else:
            wait_until(lambda: watch.switch(old, t_fault)[1], 90,
                       f"the manager naming a primary other than {old}")
        if comeback:
            if not steady and not held:
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
    # (None, None) when it never moved: a steady scenario, or a manager that named the old
    # primary again after an outage of its own (held: new may be old, judge() reads both alike).
    t0p, t0 = watch.switch(old, t_fault)
    back = watch.back_after(comeback_at) if held and comeback_at else None
    run.update(new=new, t_manager_s=round(t0 - t_fault, 2) if t0 else None,
               t0_uncertainty_s=round(t0 - t0p, 2) if t0 else None, steady=steady,
               manager_moved=t0 is not None,
               manager_reverted=watch.reverted(old, t_fault), repaired=lab.repairs[repairs_before:],
               held_s=held,
               # The manager's own outage: its unanswered samples after the fault, and when it
               # named a primary again after the heal.
               manager_silent_s=round(0.1 * sum(1 for ts in watch.silent if ts >= t_fault), 1),
               manager_back_s=round(back - t_fault, 2) if back else None,
               comeback_s=round(comeback_at - t_fault, 2) if comeback_at else None,
               role_samples={n: len(r.samples) for n, r in roles.items()},
               role_silent={n: sum(1 for x in r.samples if x[2] is None) for n, r in roles.items()},
               manager_timeline=changes(watch.samples, t_fault),
               role_timeline={n: changes(r.samples, t_fault) for n, r in roles.items()})
    ctx = dict(run=run, old=old, new=new, t_fault=t_fault, comeback_at=comeback_at, t_start=t_start,
               t_end=t_end,
               offset=(offset_before + wall_offset()) / 2, manager=L.ManagerView(watch.samples, watch.silent),
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
        r["gate"] = gate_failures(rows, lab.variants, r["variant"], judge_timing=judge_timing)
        r["timing_not_judged"] = [] if judge_timing else timing_not_judged(rows, lab.variants, r["variant"])
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


PLOT_STEP_S = 0.25  # bucket of the "writes" timeline
PLOT_FROM_S = -3.0  # the timeline starts this long before the fault


def write_buckets(writer, lost, names, t_fault, t_end):
    """{"step_s", "from_s", "acked": {node: [count per bucket]}, "lost": {node: [...]},
    "errors": [...]}: the writer's acknowledged writes by the node that acknowledged them, the
    lost ones among them, and its errors, per PLOT_STEP_S from PLOT_FROM_S after the fault."""
    n = max(1, int((t_end - t_fault - PLOT_FROM_S) / PLOT_STEP_S) + 1)

    def index(t):
        i = int((t - t_fault - PLOT_FROM_S) / PLOT_STEP_S)
        return i if 0 <= i < n else None

    out = {"step_s": PLOT_STEP_S, "from_s": PLOT_FROM_S, "acked": {}, "lost": {}, "errors": [0] * n}
    for key, events in (("acked", writer.acks), ("lost", lost)):
        for t, _, port in events:
            i = index(t)
            if i is not None:
                out[key].setdefault(names.get(port, str(port)), [0] * n)[i] += 1
    for t, _ in writer.errors:
        i = index(t)
        if i is not None:
            out["errors"][i] += 1
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
        # For drawing the run (plot.py): writes per node and errors, in buckets from the fault.
        "writes": write_buckets(writer, lost, names, t_fault, ctx["t_end"]),
        "server_nodes": {srv: n for n, srv in ctx["server_of"][v.key].items()},
        "t_end_s": round(ctx["t_end"] - t_fault, 3),
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


def release_peers(engines):
    """", on Debian 13 (PostgreSQL 17, Patroni 4.0.7, HAProxy 3.0.11)": the release and the
    peers a run used, for a section the machine header (Debian 12's peers) does not describe."""
    names = []
    for engine in engines:
        if engine == "pg":
            names.append(f"PostgreSQL {peers.pg_bin().parent.name}")
        names.append(peers.describe_engine(engine))
    line = results.version_line(["haproxy", "-v"])  # "HAProxy version 3.0.11-1 2025/..."
    words = line.split()
    names.append(f"HAProxy {words[2].split('-')[0] if len(words) > 2 else line}")
    return f", on Debian {peers.release()} ({', '.join(names)})"


# ------------------------------------------------------------------ main
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=20, help="runs of each scenario (CI: 1)")
    ap.add_argument("--engine", choices=["pg", "redis"], action="append", help="default: both")
    ap.add_argument("--scenario", action="append", help="only these scenarios (default: all)")
    ap.add_argument("--no-results", action="store_true", help="do not rewrite docs/results.md")
    ap.add_argument("--no-reasons", action="store_true",
                    help="do not run `dbcheck check` every second beside HAProxy for the reasons of "
                         "failing checks")
    ap.add_argument("--section", help="docs/results.md section to rewrite (default: failover, or partitions "
                                      "with --lab net; on Debian 13 failover-deb13, or "
                                      "failover-deb13-<engine> with one --engine)")
    ap.add_argument("--peer", choices=sorted(PEERS),
                    help="the current peer instead of Debian's: patroni4 (Patroni 4.1.4, PostgreSQL only) or "
                         "valkey8 (Valkey 8.0.1, Redis only); section <section>-<peer>")
    ap.add_argument("--tls", action="store_true",
                    help="Redis only: every node and Sentinel takes TLS only, and dbcheck, its agents and "
                         "HAProxy reach them over TLS (bench/failover/labs.py, LabTls); section "
                         "<section>[-<peer>]-tls")
    ap.add_argument("--plot", metavar="DIR",
                    help="also draw each scenario's first run as DIR/<engine>-<scenario>.png "
                         "(bench/failover/plot.py: writes per node, each configuration's view, the "
                         "manager's choice, two-writer and error windows)")
    ap.add_argument("--lab", choices=["loopback", "net"], default="loopback",
                    help="net: every host in a network namespace of its own, the partition scenarios "
                         "(bench/failover/partitions.py)")
    args = ap.parse_args()
    if args.peer:
        var, value, engine = PEERS[args.peer]
        if os.environ.get(var) != value:
            # The lab modules choose their binaries when imported (lab/peers.py): start over
            # with the peer chosen in the environment.
            os.environ[var] = value
            os.execv(sys.executable, [sys.executable, *sys.argv])
        if args.engine and args.engine != [engine]:
            ap.error(f"--peer {args.peer} is a {engine} peer")
        args.engine = [engine]
    if args.tls:
        if args.lab != "loopback" or (args.engine and args.engine != ["redis"]):
            ap.error("--tls is for the Redis lab on loopback only (--engine redis, no --lab net)")
        args.engine = ["redis"]
    labs = (PgLab, RedisLab)
    if args.lab == "net":
        import partitions  # the partition labs: loaded only for --lab net
        labs = partitions.LABS
    # A misspelt scenario would run the lab and nothing else, and pass.
    known = {s for lab_cls in labs if not args.engine or lab_cls.engine in args.engine
             for s in lab_cls.scenarios}
    unknown = sorted(set(args.scenario or ()) - known)
    if unknown:
        engines = "".join(f" --engine {e}" for e in args.engine or ())
        ap.error(f"--scenario {', '.join(unknown)}: no such scenario here (--lab {args.lab}{engines}); "
                 f"these are: {', '.join(sorted(known))}")
    # Debian 12's peers are the machine header's; a run on another release names the release
    # (and its engine, when one) in its section, so it never overwrites Debian 12's figures.
    on_release = f"-deb{peers.release()}" if peers.release() != "12" else ""
    if on_release and args.engine and len(args.engine) == 1 and not args.peer:
        on_release += f"-{args.engine[0]}"
    suffix = on_release + (f"-{args.peer}" if args.peer else "") + ("-tls" if args.tls else "")
    args.section = args.section or ("partitions" if args.lab == "net" else "failover") + suffix
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
        failed_before = len(failed)
        lab = lab_cls(workdir, tls=True) if args.tls else lab_cls(workdir)
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
                    if not args.scenario and scen in lab.slow and args.reps < MEDIAN_MIN_RUNS:
                        continue  # the short mode leaves the long scenarios out (Lab.slow)
                    t = time.monotonic()
                    got = None
                    for attempt in (1, 2):  # a lab hiccup (not a verdict) gets one more try
                        try:
                            got = run_scenario(lab, scen, rep, reasons=not args.no_reasons,
                                               judge_timing=args.reps >= MEDIAN_MIN_RUNS)
                            break
                        except Exception:  # noqa: BLE001 - report, then retry or go on
                            print(f"[failover] {lab.engine} {scen} #{rep} attempt {attempt} FAILED:\n"
                                  f"{traceback.format_exc()}", flush=True)
                            renewed = lab.renew_incomplete_logs()
                            if renewed:
                                print(f"[failover] restarted HAProxy {', '.join(renewed)} with a new log "
                                      "(it dropped log lines)", flush=True)
                    if got is None:
                        failed.append((lab.engine, scen, rep))
                        continue
                    rows += got
                    if args.plot and rep == 1:
                        import plot  # matplotlib: loaded only when asked for
                        out = plot.draw_run(got, Path(args.plot) / f"{lab.engine}-{scen}.png",
                                            command=" ".join(["bench/failover/run", *sys.argv[1:]]))
                        print(f"[failover] drew {out}", flush=True)
                    with log.open("a") as f:
                        for r in got:
                            f.write(json.dumps(r) + "\n")
                    g = got[0]
                    moved = (f"manager +{g['t_manager_s']}s" if g["t_manager_s"] is not None else
                             f"manager unread {g['manager_silent_s']}s, back +{g['manager_back_s']}s"
                             if g["held_s"] else "manager stayed")
                    print(f"[failover] {lab.engine} {scen} #{rep} ({time.monotonic() - t:.0f}s, {moved}, "
                          f"new {g['new']}):\n    " +
                          "\n    ".join(brief(r) for r in got), flush=True)
                    for r in got:
                        for why in r["gate"]:
                            print(f"[failover] GATE {lab.engine} {scen} #{rep} "
                                  f"({r['variant']}): {why}", flush=True)
                        for why in r["timing_not_judged"]:
                            print(f"[failover] NOT JUDGED ({args.reps} run(s), under {MEDIAN_MIN_RUNS}) "
                                  f"{lab.engine} {scen} #{rep} ({r['variant']}): {why}", flush=True)
                        if r["gate"] or r["timing_not_judged"]:
                            for line in r.get("new_primary_checks", []) + r.get("new_primary_verdicts", []):
                                print(f"      {line}", flush=True)
        finally:
            lab.stop()
            # Kept for reading only when something went wrong: a lab is hundreds of MB.
            if len(failed) == failed_before and not any(
                    r["gate"] for r in rows if r["engine"] == lab.engine):
                shutil.rmtree(workdir, ignore_errors=True)
            else:
                print(f"[failover] kept {workdir}: a run failed or missed its gate", flush=True)
    if not rows:
        print("[failover] no run completed", file=sys.stderr)
        return 1
    command = " ".join(["bench/failover/run", *sys.argv[1:]])
    # By what the section's name starts with: "failover-auto" is a failover proof too.
    titles = {"failover": "Failover proof: writes through HAProxy",
              "partitions": "Partition proof: writes through HAProxy, hosts in network namespaces",
              "dcs-outage": "DCS-outage proof: etcd stopped under Patroni, hosts in network namespaces"}
    title = next((t for k, t in titles.items() if args.section.startswith(k)),
                 "Planned switchover proof: writes through HAProxy")
    if on_release:
        title += release_peers([lab.engine for lab in labs if lab.engine in variants])
    elif args.peer:
        title += f", on {peers.describe_engine(PEERS[args.peer][2])}"
    if args.tls:
        title += ", over TLS"
    text = table(rows, args.reps, command, variants, failed, title, labs[0].window_field,
                 note=TLS_NOTE if args.tls else "")
    print(text)
    if not args.no_results:
        results.write_section(args.section, text)
    verdicts = gate_verdicts(rows, failed, variants)
    for (eng, scen), why in verdicts.items():
        print(f"[failover] gate {eng} {scen}: {'FAIL' if why else 'pass'}", file=sys.stderr)
    return 1 if any(verdicts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
