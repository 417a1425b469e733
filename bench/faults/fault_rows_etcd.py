"""The fault matrix's etcd rows: a private 2-member Patroni cluster whose etcd is stopped; what
the leader and dbcheck say over time, before and after Patroni demotes the leader; and the same
with Patroni's failsafe_mode on, where the leader stays primary (lab/dcs.py), right after etcd
stopped and once the leader's failsafe is active, then a replica as a reader. Declared once in ROWS
(bench/faults/fault_registry.py) as two sequences of rows: each later row needs the first's fault."""

import functools
import time
from contextlib import ExitStack, contextmanager

# The repository root (the lab package) is on PYTHONPATH: bench/faults/run sources scripts/pythonpath.
from lab import dcs, faults
from lab.agent import AgentProcess
from lab.dbcheck import run_dbcheck, write_dbcheck_config
from lab.patroni import PatroniCluster

from fault_observe import AGENT_SETTINGS, CHECK_CAP_S, Target, short
from fault_registry import Rows
from fault_runner import AGENT, DBCHECK

ROWS = Rows()


@contextmanager
def _etcd_stopped(cluster, state):
    """Stops `cluster`'s etcd, noting when in state["t0"] (rows time the fault from it)."""
    t0 = time.monotonic()
    faults.stop_etcd(cluster)
    state["t0"] = t0
    yield t0


def _restore(m, cluster, agent, label):
    """etcd back and `cluster` healed (noted as `label`), then the lab discarded."""
    try:
        faults.start_etcd(cluster)
        cluster.wait_primary(60)
        m.notes.append(f"etcd restarted: {label} healed")
    except Exception as e:  # noqa: BLE001 - noted, the row's own figures stand
        m.notes.append(f"etcd restarted, {label} did not heal in 60 s: {short(e)}")
    agent.stop()
    cluster.stop()


# What the external check and the agent must answer for the leader while Patroni keeps it
# primary under failsafe: up, as Patroni's own GET /primary (docs/failover.md, the DCS down).
FAILSAFE_EXPECT = ("up", "none")


@ROWS.row("etcd-down-before", "etcd-down-after", lab=None)
def etcd_down(m, before_name, after_name):
    cluster = PatroniCluster(m.workdir / "etcd-lab", members=2)
    m.stack.callback(cluster.stop)
    m.private_labs.append(cluster)
    cluster.start()
    leader = cluster.wait_primary()
    agent = AgentProcess(m.workdir / "etcd-agent", "agent-etcd-lab", AGENT,
                         functools.partial(write_dbcheck_config, cluster=cluster, owner=None), "pg",
                         leader.pg_addr, **AGENT_SETTINGS)
    m.stack.callback(agent.stop)
    agent.start()
    config = write_dbcheck_config(m.workdir / "configs" / "etcd-lab", cluster, owner=None,
                                  timeout="800ms")
    timeline = []

    def leader_role():
        try:
            with cluster.superuser_conn(leader, db="postgres") as c, c.cursor() as cur:
                cur.execute("SELECT pg_is_in_recovery()")
                return "replica" if cur.fetchone()[0] else "primary"
        except Exception as e:  # noqa: BLE001
            return f"unreachable ({short(e, 40)})"

    state = {}

    before = Target("pg_write", leader.pg_addr, f"pg_write @ {leader.name} (leader), etcd just stopped",
                    agent, expect=None, healthy=None)
    after = Target("pg_write", leader.pg_addr, f"pg_write @ {leader.name} after Patroni demoted it",
                   agent, expect=("down", None), healthy=None)
    stack = ExitStack()
    t0 = time.monotonic()
    try:
        # Row 1: right after etcd stops (the leader is still primary).
        m.row(before_name, "etcd stopped (TTL 20 s, loop_wait 2 s, retry_timeout 5 s); "
              "checked at once", [before], lambda: m.entered(stack, _etcd_stopped(cluster, state)),
              config=config)
        t0 = state.get("t0", t0)
        # Over time until the leader has demoted itself and runs read-only (bounded).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            run = run_dbcheck(DBCHECK, config, "explain", "pg_write", leader.pg_addr, "--json",
                              timeout=CHECK_CAP_S)
            role = leader_role()
            timeline.append((time.monotonic() - t0, role, run))
            if role == "replica":
                break
            time.sleep(1.5)
        state["demoted_after"] = next((t for t, role, _ in timeline if role != "primary"), None)
        # Row 2: once demoted (read-only, or still restarting when 60 s were not enough).
        m.row(after_name, "etcd still down, the leader has demoted itself",
              [after], m.nothing, config=config)
    finally:
        stack.close()
        # Restore: etcd back, the cluster heals; then this lab is discarded.
        _restore(m, cluster, agent, "the private cluster")
    demoted_after = state.get("demoted_after")
    rows = [f"- t+{t:4.1f}s: leader PostgreSQL {role}; dbcheck {r.state}/{r.failure} in "
            f"{r.seconds * 1000:.0f} ms: {short(r.reason, 160)}" if r.report else
            f"- t+{t:4.1f}s: leader PostgreSQL {role}; dbcheck gave no report (rc {r.rc})"
            for t, role, r in timeline]
    m.notes.append("**etcd down, over time** (private 2-member cluster, writer check every ~1.5 s; "
                   + (f"the leader demoted itself {demoted_after:.1f} s after etcd stopped"
                      if demoted_after is not None else "the leader did not demote within 60 s")
                   + "):\n\n" + "\n".join(rows))
    if demoted_after is None:
        m.lines[-1].problems.append("the leader never demoted within 60 s")


@ROWS.row("etcd-down-failsafe-before", "etcd-down-failsafe-active", "etcd-down-failsafe-reader", lab=None)
def etcd_down_failsafe(m, before_name, active_name, reader_name):
    cluster = PatroniCluster(m.workdir / "etcd-failsafe-lab", members=2)
    m.stack.callback(cluster.stop)
    m.private_labs.append(cluster)
    cluster.start()
    leader = cluster.wait_primary()
    t_on = time.monotonic()
    dcs.set_failsafe(cluster, True)  # before the outage: every member must be in /failsafe
    # The leader's own Patroni told by its URL on the node's host (lab/dcs.urls_naming).
    urls = dcs.urls_naming(cluster, leader)
    agent = AgentProcess(m.workdir / "etcd-failsafe-agent", "agent-etcd-failsafe-lab", AGENT,
                         functools.partial(write_dbcheck_config, cluster=cluster, owner=None,
                                           patroni_urls=urls), "pg",
                         leader.pg_addr, **AGENT_SETTINGS)
    m.stack.callback(agent.stop)
    agent.start()
    config = write_dbcheck_config(m.workdir / "configs" / "etcd-failsafe-lab", cluster, owner=None,
                                  timeout="800ms", patroni_urls=urls)
    # The replica's checks tell its own Patroni by its URL, as the leader's do.
    replica = cluster.replicas(leader)[0]
    replica_config = write_dbcheck_config(m.workdir / "configs" / "etcd-failsafe-lab-replica", cluster,
                                          owner=None, timeout="800ms",
                                          patroni_urls=dcs.urls_naming(cluster, replica))
    m.notes.append(f"**etcd down, failsafe on**: failsafe_mode set and /failsafe on every member in "
                   f"{time.monotonic() - t_on:.1f} s (patronictl edit-config)")
    state = {}

    label = f"pg_write @ {leader.name} (leader), failsafe_mode on"
    before = Target("pg_write", leader.pg_addr, f"{label}, etcd just stopped", agent, expect=FAILSAFE_EXPECT,
                    healthy=None)
    active = Target("pg_write", leader.pg_addr, f"{label}, the leader's failsafe active", agent,
                    expect=FAILSAFE_EXPECT, healthy=None)
    stack = ExitStack()
    try:
        # Row 1: right after etcd stops (the leader's HA loop has not failed to read it yet).
        m.row(before_name, "etcd stopped, failsafe_mode on (TTL 20 s, loop_wait 2 s, retry_timeout 5 s); "
              "checked at once", [before], lambda: m.entered(stack, _etcd_stopped(cluster, state)),
              config=config)
        # Row 2: once the leader runs under failsafe (its GET /patroni says so; bounded).
        try:
            waited = dcs.wait_failsafe_active(cluster, leader, 30)
            t = time.monotonic() - state.get("t0", time.monotonic())
            m.notes.append(f"**etcd down, failsafe on**: the leader's failsafe active {t:.1f} s after etcd "
                           f"stopped (waited {waited:.1f} s after the first row)")
            fault = "etcd still down, the leader's GET /patroni says failsafe_mode_is_active"
        except AssertionError:
            fault = "etcd still down; the leader's failsafe did NOT become active within 30 s"
        m.row(active_name, fault, [active], m.nothing, config=config)
        if not dcs.is_failsafe_active(cluster, leader):
            # Patroni demoted it after all: on Patroni 4 a REST API whose pool of 5 threads all
            # wait on the DCS (GET /cluster) leaves the leader's POST /failsafe unanswered.
            m.lines[-1].problems.append("the leader was not running under failsafe: Patroni demoted it")
        # Row 3: the replica as a reader, measured against the leader Patroni keeps (its own
        # GET /primary's WAL position), as Patroni's GET /replica keeps it (external check only:
        # the agent serves the leader's node).
        reader = Target("pg_read", replica.pg_addr, f"pg_read @ {replica.name} (replica), the leader's "
                        "failsafe active", None, expect=FAILSAFE_EXPECT, agent_expect=None, healthy=None)
        m.row(reader_name, "etcd still down, failsafe active: a replica as a reader", [reader], m.nothing,
              config=replica_config)
        line = m.lines[-1]
        if not dcs.is_failsafe_active(cluster, leader):
            line.problems.append("the leader was not running under failsafe: the row's premise failed")
        if line.ext and line.ext.report and "kept leader" not in line.ext.reason:
            # Up for another reason (a bound on the replica's last replay alone) is not this row's.
            line.problems.append("the replica was not measured against the leader Patroni keeps")
    finally:
        stack.close()
        # Restore: etcd back, the cluster heals; then this lab is discarded (failsafe with it).
        _restore(m, cluster, agent, "the private failsafe cluster")
