"""The DCS-outage scenarios' pure parts on hand-made data: the gate against Patroni's own check,
a manager that does not answer, and how the lab reads Patroni's failsafe answers:
/usr/bin/python3 -m pytest bench/failover/test_dcs.py -p no:cacheprovider"""

# bench/failover is on sys.path as this test module's directory (pytest's default import mode).
import gates as G
import losses as L
from lab import dcs
from test_losses import _six_variants, roles, series
from watches import PRIMARY, REPLICA


def _run(rep=1, lost=None, **kept):
    """One etcd-down run's rows: kept_window_s per variant key, dbcheck ones judged by 'dcs'
    against Patroni's GET /primary at their settings (a for c, a1 for d)."""
    lost = lost or {}
    return [{"engine": "pg", "scenario": "etcd-down-failsafe", "rep": rep, "variant": k, "kept_window_s": w,
             "error_window_s": w, "lost": lost.get(k, 0), "lost_late": 0, "lost_routing": 0, "two_up_s": 0,
             "log_agrees": True, "max_gap_s": w or 0.05, "recovery_s": None,
             "window_rule": "dcs" if k in ("c", "d") else "",
             "recovery_vs": {"c": ["a"], "d": ["a1"]}.get(k)}
            for k, w in kept.items()]


def test_a_check_that_drops_a_primary_patroni_keeps_fails_every_run():
    variants = _six_variants()
    # Failsafe on: Patroni's own check never lost the writer; dbcheck dropped it for the outage.
    rows = _run(a=0.0, b=0.0, c=33.5, a1=0.0, b1=0.0, d=0.4)
    why = G.gate_failures(rows, variants, "c", judge_timing=False)  # the short mode judges it too
    assert len(why) == 1 and "DCS outage" in why[0] and "a: 0.0" in why[0]
    assert G.gate_failures(rows, variants, "d", judge_timing=False) == []
    # Never back at all fails as well.
    assert "never closed" in G.gate_failures(_run(a=0.0, b=0.0, c=None, a1=0.0, b1=0.0, d=0.0),
                                             variants, "c")[0]


def test_without_failsafe_only_the_time_beyond_patronis_own_check_counts():
    variants = _six_variants()
    # Patroni demotes and comes back: its own check is without a writer 24 s; within the
    # per-run slack (1 s and a check interval at each end) dbcheck passes, beyond it fails.
    ok = _run(a=24.0, b=0.0, c=26.9, a1=23.5, b1=0.0, d=24.2)
    assert G.gate_failures(ok, variants, "c") == [] and G.gate_failures(ok, variants, "d") == []
    assert G.gate_failures(_run(a=24.0, b=0.0, c=27.1, a1=0.0, b1=0.0, d=0.0), variants, "c") != []
    # Over runs: the median within 1 s of Patroni's own check's median.
    vs = {"pg": variants}
    three = ok + _run(2, a=24.0, b=0.0, c=26.0, a1=23.0, b1=0.0, d=23.4) + \
        _run(3, a=24.5, b=0.0, c=26.5, a1=23.0, b1=0.0, d=23.6)
    why = G.dcs_gate(three, vs)[("pg", "etcd-down-failsafe")]
    assert len(why) == 1 and why[0].startswith("(c): median") and "a: 24.00" in why[0]
    # Two runs are not enough for the median rule (the per-run rule still holds).
    assert G.dcs_gate(three[:12], vs)[("pg", "etcd-down-failsafe")] == []
    assert "(c): median" in G.gate_verdicts(three, [], vs)[("pg", "etcd-down-failsafe")][0]


def test_lost_writes_count_against_the_lowest_anchor_beyond_chance():
    variants = _six_variants()
    vs = {"pg": variants}
    # 1 against 0: a coin toss; 8 against 0 over runs: not.
    one = _run(lost={"c": 1}, a=0.0, b=0.0, c=0.0, a1=0.0, b1=0.0, d=0.0)
    assert G.dcs_gate(one, vs)[("pg", "etcd-down-failsafe")] == []
    many = _run(lost={"c": 8, "b": 3}, a=0.0, b=0.0, c=0.0, a1=0.0, b1=0.0, d=0.0)
    why = G.dcs_gate(many, vs)[("pg", "etcd-down-failsafe")]
    assert len(why) == 1 and why[0].startswith("(c): lost writes 8 > lowest anchor's 0")
    # Scenarios judged otherwise are left alone.
    other = [dict(r, window_rule="window" if r["variant"] in ("c", "d") else "") for r in many]
    assert G.dcs_gate(other, vs) == {}


def test_a_silent_manager_is_not_read_as_having_moved():
    # pg1 named until t=0.4, then etcd is down (no answers) until t=3.0, then pg2.
    names = ["pg1"] * 5 + [None] * 26 + ["pg2"] * 5
    samples = series(*names)
    silent = {ts for ts, _, p in samples if p is None}
    r = roles(pg1=[PRIMARY] * 36, pg2=[REPLICA] * 30 + [PRIMARY] * 6)
    # Without the silence known, a write pg1 acknowledged at t=2.5 is 2.1 s after the
    # manager last named pg1: late for a 1.5 s bound.
    assert L.classify("pg1", 2.5, L.ManagerView(samples), r, 1.5) == L.LATE
    # Silence names nobody: the manager may still have named pg1 up to its next answer.
    view = L.ManagerView(samples, silent)
    assert abs(view.last_named_before("pg1", 2.5) - 2.4) < 1e-9
    assert L.classify("pg1", 2.5, view, r, 1.5) == L.WITHIN
    # Once the manager answers with another, the time runs from its last silent sample.
    assert abs(view.last_named_before("pg1", 4.0) - 3.0) < 1e-9
    # A manager that answered "no leader" (None, not silent) did stop naming pg1.
    assert L.ManagerView(samples, set()).last_named_before("pg1", 2.5) == 0.4


def test_the_lab_reads_patronis_failsafe_answers():
    assert dcs.config_says({"ttl": 20, "failsafe_mode": True}, True)
    assert dcs.config_says({"ttl": 20}, False) and not dcs.config_says({"ttl": 20}, True)
    assert not dcs.config_says(None, False)  # no body: not known yet
    body = {"pg1": "http://127.0.0.1:1/patroni", "pg2": "http://127.0.0.1:2/patroni"}
    assert dcs.lists_every_member(body, ["pg1", "pg2"])
    assert not dcs.lists_every_member(body, ["pg1", "pg2", "pg3"])
    assert dcs.failsafe_active({"role": "master", "failsafe_mode_is_active": True})
    assert not dcs.failsafe_active({"role": "master"}) and not dcs.failsafe_active(None)
    # An empty POST /failsafe: 400 with the mode on, 502 off; no answer is neither.
    assert dcs.acts_on(400, True) and not dcs.acts_on(502, True)
    assert dcs.acts_on(502, False) and not dcs.acts_on(400, False)
    assert not dcs.acts_on(None, False) and not dcs.acts_on(200, True)


def test_a_failsafe_that_did_not_hold_fails_the_scenario():
    vs = {"pg": _six_variants()}
    held = [dict(r, failsafe_mode=True, failsafe_active_at_heal=True)
            for r in _run(a=0.0, b=0.0, c=0.0, a1=0.0, b1=0.0, d=0.0)]
    assert G.dcs_gate(held, vs)[("pg", "etcd-down-failsafe")] == []
    # Everyone lost the writer alike (Patroni demoted the leader): not a pass.
    lapsed = [dict(r, failsafe_active_at_heal=False, kept_window_s=33.0) for r in held]
    why = G.dcs_gate(lapsed, vs)[("pg", "etcd-down-failsafe")]
    assert len(why) == 1 and "not running under failsafe" in why[0] and "#1" in why[0]
    # Without failsafe_mode the leader demotes by design.
    off = [dict(r, failsafe_mode=False) for r in lapsed]
    assert G.dcs_gate(off, vs)[("pg", "etcd-down-failsafe")] == []
