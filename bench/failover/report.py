"""The failover proof's Markdown section for docs/results.md (bench/failover/failover.py):
per-variant rows in, the table, the rules it was judged by and the gate's verdicts out."""

import statistics

import variants as V
from gates import (CHANCE_P, MEDIAN_MIN_RUNS, NO_OUTAGE_SLACK, PHASE_SLACK, WINDOW_SLACK, fmt_window,
                   gate_verdicts, keys_of)


SCENARIO_TEXT = {
    ("pg", "switchover"): "planned: `patronictl switchover`",
    ("pg", "freeze"): "unplanned: leader host frozen (SIGSTOP Patroni + PostgreSQL), back after the switch",
    ("pg", "patroni-dies"): "unplanned: Patroni killed on the leader, its PostgreSQL keeps running as "
                            "primary; Patroni restarted after the switch",
    ("pg", "etcd-down"): "the DCS down: etcd stopped 30 s, then started again; failsafe_mode off",
    ("pg", "etcd-down-failsafe"): "the DCS down: etcd stopped 30 s, then started again; failsafe_mode on "
                                  "(the leader must stay primary)",
    ("redis", "failover"): "planned: `SENTINEL FAILOVER`",
    ("redis", "dbcheck-switchover"): "planned: `dbcheck switchover` (pause, failover, demote, unpause)",
    ("pg", "dbcheck-switchover"): "planned: `dbcheck switchover` (Patroni's POST /switchover, "
                                  "then agreement)",
    ("redis", "freeze"): "unplanned: master frozen (SIGSTOP), back after the switch",
    ("redis", "failover+fencing"): "planned, with `min-replicas-to-write 1`, `min-replicas-max-lag 1`",
    ("redis", "freeze+fencing"): "unplanned, with `min-replicas-to-write 1`, `min-replicas-max-lag 1`",
}


# The --tls lab (bench/failover/labs.py, LabTls), for its section's text.
TLS_NOTE = (
    "Over TLS: every data node and Sentinel takes TLS only (`port 0`, `tls-port`, "
    "`tls-auth-clients yes`, replication and the Sentinels' links over TLS too), with certificates "
    "from a throwaway CA. dbcheck's external check, dbcheck-agent and `dbcheck switchover` connect "
    "with `tls = true`, `sentinel_tls = true`, a client certificate and `require_tls = true`; every "
    "HAProxy reaches the nodes with `ssl verify required ca-file … crt …` (its own client "
    "certificate), and the tcp-check anchors open their connections to the nodes and the Sentinel "
    "with `tcp-check connect ssl`. The harness's own samplers ask over TLS as well. The writers' leg "
    "to HAProxy stays plain TCP (the frontends have no certificate): what is measured is the routing "
    "over TLS links, not the clients' encryption.")


def table(rows, reps, command, variants, failed=(), title="Failover proof: writes through HAProxy",
          window_field="error_window_s", note=""):
    """The Markdown section for docs/results.md from all per-variant rows; `note`, when given, is
    a paragraph on what this lab differs in (TLS_NOTE)."""
    out = [
        f"## {title}",
        "",
        f"Command: `{command}` ({reps} run(s) of each scenario; "
        "every run drives the six HAProxy configurations of an engine at once, against one cluster).",
        "",
        *([note, ""] if note else []),
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
        "example). (c) is the external-check example's write frontend and backend (in the "
        "partition proof, which measures readers, the whole example). "
        "Error window: first failed write to first write acknowledged by the new primary "
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
    for eng, scen, var in keys_of(rows, "engine", "scenario", "variant"):
        rs = [r for r in rows if (r["engine"], r["scenario"], r["variant"]) == (eng, scen, var)]
        s = lambda f: sum(r[f] for r in rs)  # noqa: E731
        out.append(
            f"| {eng} | {SCENARIO_TEXT[(eng, scen)]} ({len(rs)} runs) | ({var}) {rs[0]['label']} | "
            f"{rs[0]['settings']} | {rs[0]['bound_s']:.2f} | {s('acked')} | {s('lost')} | "
            f"{s('lost_manager')} | {s('lost_reversal')} | {s('lost_at_change')} | {s('lost_behind_all')} | "
            f"{s('lost_two_writer')} | {s('lost_within')} | **{s('lost_late')}** | **{s('lost_routing')}** | "
            f"{fmt_window([r['error_window_s'] for r in rs])} | "
            f"{fmt_window([r.get('kept_window_s') for r in rs])} | {s('two_up_s'):.2f} | "
            f"{sum(1 for r in rs if r['two_up_s'] > 0)} | {s('lost_after_comeback')} |")
    manager = {}
    for r in rows:
        if r["t_manager_s"] is not None:
            manager.setdefault((r["engine"], r["scenario"]), set()).add((r["rep"], r["t_manager_s"]))
    if manager:
        out += ["", "Time from the fault to the manager naming the new primary (median, s): " + "; ".join(
            f"{eng} {scen} {statistics.median(t for _, t in v):.1f}" for (eng, scen), v in manager.items())
            + "."]
    held = {}
    for r in rows:
        if r.get("held_s"):
            held.setdefault((r["engine"], r["scenario"]), {})[r["rep"]] = r
    if held:
        out += ["", "Where the manager itself was down (etcd stopped): the manager unread for (median s), "
                "named a primary again after the fault (median s), and the runs whose leader afterwards was "
                "the old primary: " + "; ".join(
                    f"{eng} {scen} {statistics.median(r['manager_silent_s'] for r in v.values()):.1f}, "
                    + fmt_window([r["manager_back_s"] for r in v.values()]).split(" / ")[0]
                    + f", {sum(1 for r in v.values() if r['new'] == r['old'])} of {len(v)}"
                    for (eng, scen), v in held.items()) + "."]
    readers = [k for k in keys_of(rows, "engine", "scenario", "variant")
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
                    + fmt_window([r["reader_out_s"] for r in rows
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
            + (f" With fewer than {MEDIAN_MIN_RUNS} runs (the suite's short mode) a window or a time back "
               "after the heal that closed however late, and a gap where the primary stays in place, are "
               "printed as NOT JUDGED instead: one run on a "
               "busy shared machine times the checks' own processes as much as their rule. A window that "
               "never closed still fails." if reps < MEDIAN_MIN_RUNS else "")
            + (" Where the fault must leave the primary in place (a replica cut from its primary, a Sentinel "
               "minority cut off, and for dbcheck-agent HAProxy's host cut from the managers), a run fails "
               f"with a gap of {NO_OUTAGE_SLACK:.0f} s or more without a kept write beyond the steadiest "
               "anchor's longest; where a check must fail closed (the external check when HAProxy's host is "
               "cut from the managers), its time back after the heal is compared, per run and on the "
               "median, with the anchor that asks over the same path (Patroni's `GET /primary`; the "
               "Sentinel + ROLE tcp-check's Sentinel); a cut replica must leave each dbcheck "
               "configuration's read backend within its documented bound (bench/failover/partitions.py)."
               if any(r.get("steady") for r in rows) else "")
            + (" Where the DCS is down (etcd stopped), each dbcheck configuration's time without a kept "
               "write is compared with Patroni's own `GET /primary` at its settings, the check a user runs "
               f"instead: in every run (the short mode's too) not more than {WINDOW_SLACK + PHASE_SLACK:.0f} "
               f"s longer, over the scenario's runs (from {MEDIAN_MIN_RUNS}) a median not more than "
               f"{WINDOW_SLACK:.0f} s longer; and its lost writes, summed, no more than the lowest anchor's "
               "at its settings beyond chance. With failsafe_mode on, a run also fails when the old leader "
               "no longer ran under failsafe when etcd came back (Patroni demoted it after all)."
               if any(r.get("window_rule") == "dcs" for r in rows) else ""), "",
            "| engine | scenario | gate | why |", "| --- | --- | --- | --- |"]
    for (eng, scen), why in gate_verdicts(rows, failed, variants).items():
        out.append(f"| {eng} | {scen} | {'**FAIL**' if why else 'pass'} | {'; '.join(why) if why else ''} |")
    return "\n".join(out)


def brief(r):
    """One variant's figures of one run, for the progress line."""
    return (f"{r['variant']}: lost {r['lost']} (routing {r['lost_routing']}: late {r['lost_late']}, "
            f"2w {r['lost_two_writer']}; mgr {r['lost_manager']}, rev {r['lost_reversal']}, "
            f"chg {r['lost_at_change']}, all {r['lost_behind_all']}) "
            f"up2 {r['two_up_s']:.2f}s win {r['error_window_s']} kept-win {r['kept_window_s']} "
            f"max-gap {r['max_gap_s']}")
