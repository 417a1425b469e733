"""The fault matrix (issue 5): each fault injected against real servers on 127.0.0.1, with the
verdict of the external check (`dbcheck explain --json`, its own wall time) and of the
dbcheck-agent serving that node (its /health: reported state, failure, reason, and the time
from injection until it reported the expected verdict), then the fault removed and health
awaited (bounded).

Run through bench/fault-matrix (root, Debian's /usr/bin/python3, build/ already built).
Exit status 1 when any row broke the deadline (timeout + 100 ms), hung (hard caps: the check
process at timeout + 5 s, the row at ROW_CAP_S), gave another verdict than the one expected,
leaked a secret, or could not be measured. Lab servers are ours, stopped by PID.
"""

import argparse
import functools
import json
import shutil
import signal
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

# tests/integration (the fixtures package) is on PYTHONPATH: bench/fault-matrix sources scripts/pythonpath.
from fixtures import faults, redis as redis_fx
from fixtures.agent import AgentProcess, start_pg_agents, start_redis_agents
from fixtures.binaries import agent_bin, dbcheck_bin
from fixtures.dbcheck import run_dbcheck, write_dbcheck_config, write_redis_config
from fixtures.fake_http import FakeHttp
from fixtures.fake_resp import FakeResp
from fixtures.patroni import HBA_REJECTED_USER, PatroniCluster
from fixtures import patroni as patroni_fx
from fixtures.periodic import Periodic
from fixtures.ports import free_ports
from fixtures.procs import wait_until
from fixtures.redis import RedisSentinelCluster

# $DBCHECK_BIN / $DBCHECK_AGENT_BIN override them, as for the tests: a fix can be measured from
# another build dir.
DBCHECK = dbcheck_bin()
AGENT = agent_bin()
TIMEOUT_S, MARGIN_S = 0.8, 0.1    # the configured check deadline and the margin
CHECK_CAP_S = TIMEOUT_S + 5       # a check process still running then is killed: a hang
ROW_CAP_S = 150                   # hard wall-clock cap of one row (SIGALRM)
AGENT_SETTINGS = {"interval": "1s", "fall": 2, "rise": 3}  # haproxy-examples/dbcheck-agent.toml
VERDICT_WAIT_S = 15               # bound on the agent's time to verdict
HEAL_WAIT_S = 40                  # bound on "healthy again" after the fault is removed
WRONG_PG_PASSWORD, WRONG_REDIS_PASSWORD = "wrong-Secret-4711", "wrong-Redis-4711"
SECRETS = {patroni_fx.HC_PASSWORD, patroni_fx.SUPERUSER_PASSWORD, patroni_fx.REPLICATION_PASSWORD,
           patroni_fx.APP_PASSWORD, redis_fx.HC_PASSWORD, redis_fx.ADMIN_PASSWORD, WRONG_PG_PASSWORD,
           WRONG_REDIS_PASSWORD}
UNRESOLVABLE = "nonexistent.invalid"


class RowHung(Exception):
    """A row went past ROW_CAP_S (raised in the main thread by SIGALRM)."""


def _alarm(signum, frame):
    raise RowHung(f"row still running after {ROW_CAP_S}s")


# ------------------------------------------------------------------ observations
class AgentWatch(Periodic):
    """Polls one agent's /health every 100 ms and keeps (time.monotonic(), backend entry) for
    `backend` (None when /health did not answer)."""

    def __init__(self, agent, backend):
        super().__init__(f"watch-{agent.name}-{backend}", 0.1, max_seconds=ROW_CAP_S)
        self.agent, self.backend, self.samples = agent, backend, []

    def tick(self):
        try:
            entry = self.agent.health()["backends"][self.backend]
        except (OSError, ValueError, KeyError):
            entry = None
        self.samples.append((time.monotonic(), entry))

    def first(self, predicate, since):
        """(time, entry) of the first sample whose probe round ended at/after `since` (a
        verdict from before the injection or the reload does not count) and which satisfies
        predicate(entry)."""
        return next(((t, e) for t, e in list(self.samples)
                     if e and e["last_round"]["age_s"] is not None and t - e["last_round"]["age_s"] >= since
                     and predicate(e)), None)

    def last(self):
        return next((e for _, e in reversed(list(self.samples)) if e), None)


def reported(entry):
    """(state, failure) the agent reports for a backend (a stale verdict counts as down)."""
    return (entry["state"], entry["reported"]["failure"])


@dataclass
class Target:
    """One backend checked in a row: the external check's and the agent's expected verdicts as
    (state, failure) — None records without expecting; `agent_expect` defaults to `expect`."""

    backend: str
    addr: str
    label: str
    agent: object = None
    expect: tuple = None
    agent_expect: tuple = "same"
    healthy: tuple = ("up", "none")

    def __post_init__(self):
        if self.agent_expect == "same":
            self.agent_expect = self.expect


@dataclass
class Line:
    """One table line: a row's verdicts for one backend."""

    row: str
    fault: str
    target: Target
    ext: object = None          # DbcheckRun
    ext_error: str = ""
    agent_entry: dict = None
    agent_ttv: float = None
    agent_note: str = ""
    problems: list = field(default_factory=list)


def matches(got, expect):
    """True when (state, failure) `got` is `expect`; None expects nothing, a None failure any."""
    return expect is None or (got[0] == expect[0] and expect[1] in (None, got[1]))


def squeeze(text, inner=72):
    """`text` with every long top-level (parenthesised list) cut to its first item: a reason
    names each Patroni member or Sentinel in one, and the node's opinion comes after it."""
    out, depth, group = [], 0, []
    for ch in text:
        if depth == 0 and ch != "(":
            out.append(ch)
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        group.append(ch)
        if depth == 0:
            body = "".join(group)[1:-1]
            if len(body) > inner:
                body = body.split("; ")[0][:inner] + ("; …" if "; " in body else "…")
            out.append(f"({body})")
            group = []
    return "".join(out) + "".join(group)


def short(text, n=200):
    text = squeeze(" ".join(str(text).split())).replace("|", "/")
    return text if len(text) <= n else text[:n - 1] + "…"


def check_secrets(line, *texts):
    for s in SECRETS:
        if any(s in t for t in texts if t):
            line.problems.append(f"secret {s[:3]}… leaked")


class Matrix:
    """Runs the rows against the labs and collects the table lines."""

    def __init__(self, workdir, only):
        self.workdir = Path(workdir)
        self.only = set(only or ())
        self.lines, self.notes, self.skipped = [], [], []
        self.stack = ExitStack()
        self.pg = self.redis = None
        self.pg_agents, self.redis_agents = {}, {}

    # ---------------------------------------------------------------- labs
    def want(self, *rows):
        return not self.only or bool(self.only & set(rows))

    def start_labs(self, need_pg, need_redis):
        """The shared labs, started in parallel; their agents (one per node) after."""
        errors = []

        def start(cls, name, attr):
            try:
                lab = cls(self.workdir / name)
                self.stack.callback(lab.stop)
                setattr(self, attr, lab.start())
            except BaseException as e:  # noqa: BLE001 - re-raised below
                errors.append(e)
        threads = []
        if need_pg:
            threads.append(threading.Thread(target=start, args=(PatroniCluster, "pg", "pg")))
        if need_redis:
            threads.append(threading.Thread(target=start, args=(RedisSentinelCluster, "redis", "redis")))
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
        if errors or any(t.is_alive() for t in threads):
            raise RuntimeError(f"lab start failed: {errors!r}")
        print(f"labs up in {time.monotonic() - t0:.1f}s", flush=True)
        if self.pg:
            agents = start_pg_agents(self.workdir / "pg-agents", self.pg, AGENT, **AGENT_SETTINGS)
            self.pg_agents = {a.name.removeprefix("agent-"): a for a in agents}
            for a in agents:
                self.stack.callback(a.stop)
        if self.redis:
            agents = start_redis_agents(self.workdir / "redis-agents", self.redis, AGENT, **AGENT_SETTINGS)
            self.redis_agents = {a.name.removeprefix("agent-"): a for a in agents}
            for a in agents:
                self.stack.callback(a.stop)

    def pg_config(self, name, **kw):
        return write_dbcheck_config(self.workdir / "configs" / name, self.pg, owner=None, timeout="800ms",
                                    **kw)

    def redis_config(self, name, **kw):
        return write_redis_config(self.workdir / "configs" / name, self.redis, owner=None, timeout="800ms",
                                  **kw)

    def pg_targets(self, writer=True, reader=False, **kw):
        """Targets on the current leader (writer) and/or the first replica (reader)."""
        leader = self.pg.wait_healthy()
        replica = self.pg.replicas()[0]
        return self._targets(("pg_write", leader.pg_addr, leader.name, "leader"),
                             ("pg_read", replica.pg_addr, replica.name, "replica"),
                             self.pg_agents, writer, reader, kw)

    def redis_targets(self, writer=True, reader=False, **kw):
        """Targets on the current master (writer) and/or its replica (reader)."""
        master = self.redis.wait_stable()
        replica = next(n for n in self.redis.nodes() if n != master)
        return self._targets(("redis_write", master.addr, master.name, "master"),
                             ("redis_read", replica.addr, replica.name, "replica"),
                             self.redis_agents, writer, reader, kw)

    @staticmethod
    def _targets(primary, replica, agents, writer, reader, kw):
        """Target rows for (backend, node address, node name, its role) of the primary and/or
        the replica, each with its node's agent."""
        chosen = ([primary] if writer else []) + ([replica] if reader else [])
        return [Target(backend, addr, f"{backend} @ {name} ({role})", agents[name], **kw)
                for backend, addr, name, role in chosen]

    # ---------------------------------------------------------------- one row
    def external(self, line, config):
        """Run `dbcheck explain --json` once for line.target; record it and its problems."""
        t = line.target
        try:
            line.ext = run_dbcheck(DBCHECK, config, "explain", t.backend, t.addr, "--json",
                                   timeout=CHECK_CAP_S)
        except Exception as e:  # noqa: BLE001 - subprocess.TimeoutExpired is a hang
            line.ext_error = f"HANG: no answer after {CHECK_CAP_S:.1f}s" if "timed out" in str(e) else repr(e)
            line.problems.append(f"external check: {line.ext_error}")
            return
        check_secrets(line, line.ext.stdout, line.ext.stderr)
        if line.ext.report is None:
            line.problems.append(f"external check gave no JSON (rc {line.ext.rc}): {short(line.ext.stderr)}")
            return
        if line.ext.seconds > TIMEOUT_S + MARGIN_S:
            line.problems.append(f"external check took {line.ext.seconds * 1000:.0f} ms > "
                                 f"{(TIMEOUT_S + MARGIN_S) * 1000:.0f} ms")
        got = (line.ext.state, line.ext.failure)
        if not matches(got, t.expect):
            line.problems.append(f"external verdict {got} != expected {t.expect}")

    def row(self, name, fault, targets, inject, config=None, settle=None, force=False):
        """One row: start watching each target's agent, enter `inject()` (a context manager:
        the fault is in force inside it), run the external check of each target with `config`
        (default: the lab's own), wait (bounded) for each agent's expected verdict, leave the
        block (the fault is removed), then wait until every target is healthy again, for the
        agent and (with the lab's config) for the external check, and call `settle()`.
        Skipped unless selected by --only (or `force`)."""
        if not (force or self.want(name)):
            return
        print(f"-- {name}: {fault}", flush=True)
        lines = [Line(name, fault, t) for t in targets]
        signal.alarm(ROW_CAP_S)
        t_row = time.monotonic()
        try:
            with ExitStack() as watches:
                watch = {id(t): watches.enter_context(AgentWatch(t.agent, t.backend))
                         for t in targets if t.agent}
                t_before = time.monotonic()
                try:
                    with inject() as t_inject:
                        # A fault that is not instantaneous (a reload, a start) says when it began.
                        t_inject = t_inject if isinstance(t_inject, float) else t_before
                        for line in lines:
                            self.external(line, config or self.base_config(line.target))
                        for line in lines:
                            self._agent_verdict(line, watch.get(id(line.target)), t_inject)
                finally:
                    t_removed = time.monotonic()
                for line in lines:
                    self._healthy_again(line, watch.get(id(line.target)), t_removed)
            if settle:
                settle()
        except RowHung as e:
            for line in lines:
                line.problems.append(str(e))
        except Exception as e:  # noqa: BLE001 - a row that cannot be measured is a failing row
            for line in lines:
                line.problems.append(f"row failed: {short(repr(e), 300)}")
        finally:
            signal.alarm(0)
        for line in lines:
            if line.target.agent:
                check_secrets(line, line.target.agent.log_text())
            self.lines.append(line)
            ext = f"{line.ext.state}/{line.ext.failure} {line.ext.seconds * 1000:.0f}ms" if line.ext and \
                line.ext.report else line.ext_error
            agent = "/".join(reported(line.agent_entry)) if line.agent_entry else "-"
            ttv = f"{line.agent_ttv:.1f}s" if line.agent_ttv is not None else line.agent_note
            print(f"   {line.target.label}: external {ext}; agent {agent} {ttv}"
                  + (f"  PROBLEMS: {line.problems}" if line.problems else ""), flush=True)
        print(f"   ({time.monotonic() - t_row:.1f}s)", flush=True)

    def base_config(self, target):
        return self.redis_config("base") if target.backend.startswith("redis") else self.pg_config("base")

    def _agent_verdict(self, line, watch, since):
        t = line.target
        if watch is None:
            return
        if t.agent_expect is None:
            # Nothing to wait for: what the agent says one full round after injection.
            time.sleep(max(0.0, since + 2.2 - time.monotonic()))
            line.agent_entry = watch.last()
            line.agent_note = "as reported 2 rounds after"
        else:
            try:
                when, entry = wait_until(
                    lambda: watch.first(lambda e: matches(reported(e), t.agent_expect), since),
                    VERDICT_WAIT_S, f"{t.agent.name} reporting {t.agent_expect}")
                line.agent_entry, line.agent_ttv = entry, when - since
            except AssertionError:
                line.agent_entry = watch.last()
                line.agent_note = f"not within {VERDICT_WAIT_S}s"
                got = reported(line.agent_entry) if line.agent_entry else None
                line.problems.append(f"agent: {got} after {VERDICT_WAIT_S}s, expected {t.agent_expect}")
        if line.agent_entry:
            check_secrets(line, json.dumps(line.agent_entry))

    def _healthy_again(self, line, watch, since):
        t = line.target
        if t.healthy is None:
            return
        try:
            if watch is not None:
                wait_until(lambda: watch.first(lambda e: reported(e) == t.healthy, since), HEAL_WAIT_S,
                           f"{t.agent.name} reporting {t.healthy} again")
            config = self.base_config(t)
            wait_until(lambda: run_dbcheck(DBCHECK, config, "explain", t.backend, t.addr, "--json",
                                           timeout=CHECK_CAP_S).rc == 0, HEAL_WAIT_S,
                       f"external check of {t.label} passing again")
        except AssertionError as e:
            line.problems.append(f"not healthy again: {short(str(e), 200)}")

    # ---------------------------------------------------------------- fault helpers
    @staticmethod
    @contextmanager
    def nothing():
        yield None

    @contextmanager
    def reconfigured(self, targets, **kw):
        """The targets' agents rewritten with `kw` and reloaded (the injection time is the
        SIGHUP); restored to the lab's config after."""
        agents = {id(t.agent): t for t in targets if t.agent}
        t0 = time.monotonic()
        done = []
        try:
            for t in agents.values():
                t.agent.reconfigure(t.addr, **kw)
                done.append(t)
            yield t0
        finally:
            for t in done:
                t.agent.reconfigure(t.addr)

    def config_row(self, name, fault, targets, lab, **kw):
        """A fault that lives in dbcheck's configuration (a wrong password, a fake peer's
        address): the external check runs with it, the agent is reloaded with it."""
        if not self.want(name):
            return
        config = (self.pg_config if lab == "pg" else self.redis_config)(name, **kw)
        self.row(name, fault, targets, functools.partial(self.reconfigured, targets, **kw), config=config)

    def fake_peer_rows(self, prefix, what, modes, targets, lab, key):
        """One config row per (mode, expected failure, description) of `modes`: three fake peers
        in that mode (FakeHttp for lab "pg", FakeResp for "redis") replace the manager's members
        in the config (`key`: patroni_urls or sentinels); the writer is checked."""
        for mode, kind, how in modes:
            name = f"{prefix}-{mode}"
            if not self.want(name):
                continue
            with ExitStack() as fakes:
                cls = FakeHttp if lab == "pg" else FakeResp
                peers = [fakes.enter_context(cls(mode)) for _ in range(3)]
                addrs = [p.url if lab == "pg" else p.addr for p in peers]
                self.config_row(name, f"{what}: {how}", targets(expect=("down", kind)), lab, **{key: addrs})

    # ---------------------------------------------------------------- PostgreSQL rows
    def pg_rows(self):
        pg = self.pg

        def leader_postmaster():
            return faults.frozen([pg.postmaster_pid(pg.leader())])
        self.row("pg-wedged-postmaster",
                 "SIGSTOP on the leader's postmaster (sessions already open keep working)",
                 self.pg_targets(expect=("down", "timeout")), leader_postmaster)

        def replica_instance():
            return faults.frozen(faults.postgres_pids(pg, pg.replicas()[0]))
        self.row("pg-wedged-instance", "SIGSTOP on every process of a replica's PostgreSQL",
                 self.pg_targets(writer=False, reader=True, expect=("down", "timeout")), replica_instance)

        def patroni_frozen():
            return faults.frozen([d.pid for d in pg.patroni.values()])
        self.row("patroni-rest-hung", "SIGSTOP on all three Patroni daemons (PostgreSQL keeps running)",
                 self.pg_targets(reader=True, expect=("down", "timeout")), patroni_frozen)

        if self.want("patroni-rest-refused"):
            closed = [f"http://127.0.0.1:{p}" for p in free_ports(3)]
            self.config_row("patroni-rest-refused",
                            "every Patroni REST URL refuses connections (closed ports)",
                            self.pg_targets(reader=True, expect=("down", "network")), "pg",
                            patroni_urls=closed)

        self.fake_peer_rows("patroni-fake", "three fake Patroni REST APIs",
                            (("garbage", "protocol", "200 OK with an HTML body"),
                             ("truncated", "protocol", "Content-Length 100, 14 bytes, close"),
                             ("huge", "protocol", "Content-Length 64 MB, 8 MB sent"),
                             ("slow", "timeout", "the answer after 5 s"),
                             ("trickle", "timeout", "one byte every 200 ms")),
                            self.pg_targets, "pg", "patroni_urls")

        if self.want("pg-max-connections"):
            def full():
                return faults.connections_exhausted(pg, pg.leader())
            self.row("pg-max-connections",
                     "application connections fill the leader's max_connections (53300)",
                     self.pg_targets(expect=("up", "saturated")), full)

        self.config_row("pg-wrong-password", "the check user's password file holds a wrong password",
                        self.pg_targets(expect=("down", "auth")), "pg", password=WRONG_PG_PASSWORD)
        self.config_row("pg-hba-reject", f"pg_hba.conf rejects the check user ({HBA_REJECTED_USER})",
                        self.pg_targets(expect=("down", "auth")), "pg", user=HBA_REJECTED_USER)
        self.config_row("pg-dns-patroni", f"the Patroni URLs name {UNRESOLVABLE} (does not resolve)",
                        self.pg_targets(expect=("down", "network")), "pg",
                        patroni_urls=[f"http://{i}.{UNRESOLVABLE}:8008" for i in (1, 2, 3)])
        if self.want("pg-dns-node"):
            agent = self.pg_agents[pg.leader().name]
            # Patroni names another leader: that "not this node" wins over the lookup failure.
            target = Target("pg_write", f"{UNRESOLVABLE}:5432", f"pg_write @ {UNRESOLVABLE}:5432", agent,
                            expect=("down", "role"), healthy=None)

            @contextmanager
            def agent_on_unresolvable():
                t0 = time.monotonic()
                agent.reconfigure(target.addr)
                try:
                    yield t0
                finally:
                    agent.reconfigure(pg.leader().pg_addr)
            self.row("pg-dns-node", f"the node to check is {UNRESOLVABLE}:5432 (agent: [agent.local])",
                     [target], agent_on_unresolvable,
                     settle=lambda: wait_until(lambda: reported(agent.health()["backends"]["pg_write"]) ==
                                               ("up", "none"), HEAL_WAIT_S, "the leader's agent up again"))

        if self.want("pg-read-only"):
            @contextmanager
            def read_only():
                # Through the `postgres` database: a new session in appdb is read-only too.
                def alter(action):
                    with pg.superuser_conn(pg.leader(), db="postgres") as conn, conn.cursor() as cur:
                        cur.execute(f"ALTER DATABASE {patroni_fx.APP_DB} {action}")
                alter("SET default_transaction_read_only = on")
                try:
                    yield None
                finally:
                    alter("RESET default_transaction_read_only")
            self.row("pg-read-only",
                     f"ALTER DATABASE {patroni_fx.APP_DB} SET default_transaction_read_only = on "
                     "on the leader",
                     self.pg_targets(expect=("down", "role")), read_only)

        if self.want("pg-starting-57P03"):
            self.starting_row()

    def starting_row(self):
        """A PostgreSQL held before consistency answers 57P03; its own agent watches it."""
        node = faults.StartingPostgres(self.workdir / "starting", self.pg).prepare()
        agent = AgentProcess(self.workdir / "starting-agent", "agent-starting", AGENT,
                             functools.partial(write_dbcheck_config, cluster=self.pg, owner=None), "pg",
                             node.addr, **AGENT_SETTINGS)
        self.stack.callback(node.stop)
        self.stack.callback(agent.stop)
        agent.start()  # the node is not there yet: the agent reports it down (network)
        target = Target("pg_read", node.addr, "pg_read @ standby held in startup", agent,
                        expect=("down", "not_ready"), healthy=None)

        @contextmanager
        def started():
            t0 = time.monotonic()
            node.start()
            print(f"   the held standby answers: {short(node.sqlstate_probe(), 120)}", flush=True)
            try:
                yield t0
            finally:
                node.stop()
        self.row("pg-starting-57P03", "a standby that cannot reach consistency (base backup without WAL) "
                 "answers 57P03; time from its start", [target], started, settle=agent.stop)

    # ---------------------------------------------------------------- etcd down
    def etcd_rows(self):
        """A private 2-member Patroni cluster whose etcd is stopped: what the leader and dbcheck
        say over time, before and after Patroni demotes the leader."""
        if not self.want("etcd-down-before", "etcd-down-after"):
            return
        cluster = PatroniCluster(self.workdir / "etcd-lab", members=2)
        self.stack.callback(cluster.stop)
        cluster.start()
        leader = cluster.wait_healthy()
        agent = AgentProcess(self.workdir / "etcd-agent", "agent-etcd-lab", AGENT,
                             functools.partial(write_dbcheck_config, cluster=cluster, owner=None), "pg",
                             leader.pg_addr, **AGENT_SETTINGS)
        self.stack.callback(agent.stop)
        agent.start()
        config = write_dbcheck_config(self.workdir / "configs" / "etcd-lab", cluster, owner=None,
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

        @contextmanager
        def etcd_stopped():
            t0 = time.monotonic()
            faults.stop_etcd(cluster)
            state["t0"] = t0
            yield t0

        def demoted():
            return leader_role() != "primary"

        before = Target("pg_write", leader.pg_addr, f"pg_write @ {leader.name} (leader), etcd just stopped",
                        agent, expect=None, healthy=None)
        after = Target("pg_write", leader.pg_addr, f"pg_write @ {leader.name} after Patroni demoted it",
                       agent, expect=("down", None), healthy=None)
        stack = ExitStack()
        t0 = time.monotonic()
        try:
            # Row 1: right after etcd stops (the leader is still primary).
            self.row("etcd-down-before", "etcd stopped (TTL 20 s, loop_wait 2 s, retry_timeout 5 s); "
                     "checked at once", [before], lambda: self._enter(stack, etcd_stopped()),
                     config=config, force=True)
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
            self.row("etcd-down-after", "etcd still down, the leader has demoted itself",
                     [after], self.nothing, config=config, force=True)
        finally:
            stack.close()
            # Restore: etcd back, the cluster heals; then this lab is discarded.
            try:
                faults.start_etcd(cluster)
                cluster.wait_healthy(60)
                self.notes.append("etcd restarted: the private cluster healed")
            except Exception as e:  # noqa: BLE001
                self.notes.append(f"etcd restarted, the private cluster did not heal in 60 s: {short(e)}")
            agent.stop()
            cluster.stop()
        demoted_after = state.get("demoted_after")
        rows = [f"- t+{t:4.1f}s: leader PostgreSQL {role}; dbcheck {r.state}/{r.failure} in "
                f"{r.seconds * 1000:.0f} ms: {short(r.reason, 160)}" if r.report else
                f"- t+{t:4.1f}s: leader PostgreSQL {role}; dbcheck gave no report (rc {r.rc})"
                for t, role, r in timeline]
        self.notes.append("**etcd down, over time** (private 2-member cluster, writer check every ~1.5 s; "
                          + (f"the leader demoted itself {demoted_after:.1f} s after etcd stopped"
                             if demoted_after is not None else "the leader did not demote within 60 s")
                          + "):\n\n" + "\n".join(rows))
        if demoted_after is None:
            self.lines[-1].problems.append("the leader never demoted within 60 s")

    @staticmethod
    @contextmanager
    def _enter(stack, cm):
        """Enter `cm` on `stack` (kept open past the row: the fault outlives it)."""
        yield stack.enter_context(cm)

    # ---------------------------------------------------------------- Redis rows
    def redis_rows(self):
        r = self.redis

        def replica_frozen():
            master = r.wait_stable()
            replica = next(n for n in r.nodes() if n != master)
            return faults.frozen([r.pid(replica)])
        self.row("redis-wedged-replica",
                 "SIGSTOP on the replica's redis-server (no failover: it is not the master)",
                 self.redis_targets(writer=False, reader=True, expect=("down", "timeout")), replica_frozen,
                 settle=lambda: r.wait_stable(30))

        # One fake Sentinel of three names the replica: outvoted at an older epoch (it has not
        # caught up), the writer's end at a newer one (a failover the others have not heard of).
        for name, epoch, what, expect in (
                ("sentinel-one-stale", 0, "at an older epoch (0)", ("up", "none")),
                ("sentinel-one-newer", 99, "at a newer epoch (99): a failover the others have not heard of",
                 ("down", "role"))):
            if not self.want(name):
                continue
            master = r.wait_stable()
            replica = next(n for n in r.nodes() if n != master)
            with FakeResp("sentinel", master=replica.addr, epoch=epoch) as liar:
                sentinels = [s.addr for s in r.sentinels()[:2]] + [liar.addr]
                self.config_row(name, f"one of three Sentinels is a fake naming the replica master {what}",
                                self.redis_targets(expect=expect), "redis", sentinels=sentinels)

        @contextmanager
        def two_sentinels_down():
            stopped = []
            try:
                for s in r.sentinels()[1:]:
                    r.stop_sentinel(s)
                    stopped.append(s)
                yield None
            finally:
                for s in stopped:
                    r.start_sentinel(s)
        # Only refusals stand against the master (the third Sentinel names it): uncertainty,
        # damped like any network failure, not a "not this node".
        self.row("sentinels-two-down", "two of three Sentinels stopped",
                 self.redis_targets(expect=("down", "network")), two_sentinels_down,
                 settle=lambda: r.wait_stable(30))

        self.config_row("redis-wrong-password", "the check user's password file holds a wrong password",
                        self.redis_targets(reader=True, expect=("down", "auth")), "redis",
                        password=WRONG_REDIS_PASSWORD, sentinel_password=redis_fx.HC_PASSWORD)

        self.fake_peer_rows("sentinel-fake", "three fake Sentinels",
                            (("garbage", "protocol", "an HTML line"),
                             ("truncated", "network", "half an answer, then close"),
                             ("huge", "timeout", "a 500 MB bulk string announced, 8 MB sent"),
                             ("slow", "timeout", "the answer after 5 s"),
                             ("trickle", "timeout", "one byte per second")),
                            self.redis_targets, "redis", "sentinels")

        self.config_row("redis-dns-sentinels", f"the Sentinel addresses name {UNRESOLVABLE}",
                        self.redis_targets(expect=("down", "network")), "redis",
                        sentinels=[f"{i}.{UNRESOLVABLE}:26379" for i in (1, 2, 3)])

        if self.want("redis-loading"):
            self.loading_row()

    def loading_row(self):
        """A private Redis restarted on a large RDB answers -LOADING; its own agent watches it."""
        node = faults.LoadingRedis(self.workdir / "loading")
        self.stack.callback(node.stop)
        t0 = time.monotonic()
        node.start()
        populated = time.monotonic() - t0
        agent = AgentProcess(self.workdir / "loading-agent", "agent-loading", AGENT,
                             functools.partial(write_redis_config, cluster=self.redis, owner=None), "cache",
                             node.addr, **AGENT_SETTINGS)
        self.stack.callback(agent.stop)
        agent.start()
        target = Target("redis_read", node.addr, "redis_read @ private node loading its RDB", agent,
                        expect=("down", "not_ready"), healthy=None)
        state = {}

        @contextmanager
        def restarted():
            t = time.monotonic()
            node.restart()
            state["t"] = t
            try:
                yield t
            finally:
                node.wait_loaded(120)
                state["loaded"] = time.monotonic() - t
        self.row("redis-loading", f"restart of a Redis holding {node.keys:,} keys (key-load-delay "
                 f"{node.delay} us): -LOADING; time from the restart", [target], restarted, settle=agent.stop)
        if "loaded" in state:
            self.notes.append(f"redis-loading: {node.keys:,} keys populated and saved in {populated:.1f}s; "
                              f"the restarted node answered -LOADING until {state['loaded']:.1f}s after the "
                              f"restart")

    # ---------------------------------------------------------------- output
    def table(self):
        head = ("| row | fault | backend | external verdict | external reason | time | agent verdict | "
                "agent reason | agent time to verdict |")
        out = [head, "| --- | --- | --- | --- | --- | ---: | --- | --- | ---: |"]
        for ln in self.lines:
            if ln.ext and ln.ext.report:
                # The process's wall time, and the check's own elapsed_ms (the rest is exec and exit).
                ext, reason, t = (f"{ln.ext.state}/{ln.ext.failure}", short(ln.ext.reason),
                                  f"{ln.ext.seconds * 1000:.0f} ms ({ln.ext.report['elapsed_ms']:.0f})")
            else:
                ext, reason, t = "—", short(ln.ext_error or "not run"), "—"
            if ln.agent_entry:
                a = ln.agent_entry
                agent = "/".join(reported(a))
                areason = short(a["reported"]["reason"])
                check = f" (check {a['last_round']['elapsed_ms']:.0f} ms)"
                ttv = (f"{ln.agent_ttv:.1f} s" if ln.agent_ttv is not None else ln.agent_note) + check
            else:
                agent, areason, ttv = "—", "—", ln.agent_note or "—"
            flag = " **FAIL**" if ln.problems else ""
            out.append(f"| {ln.row}{flag} | {short(ln.fault, 120)} | {ln.target.label} | {ext} | {reason} | "
                       f"{t} | {agent} | {areason} | {ttv} |")
        return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="ROW",
                        help="run only these rows (names as in the table)")
    parser.add_argument("--no-write", action="store_true",
                        help="print the table, leave docs/results.md alone")
    args = parser.parse_args()
    for binary in (DBCHECK, AGENT):
        if not binary.is_file():
            sys.exit(f"{binary} not found: run ./scripts/build first")
    signal.signal(signal.SIGALRM, _alarm)
    workdir = Path(tempfile.mkdtemp(prefix="dbcheck-faults.", dir="/tmp"))
    workdir.chmod(0o755)
    t0 = time.monotonic()
    m = Matrix(workdir, args.only)
    pg_rows = [n for n in ROWS if n.startswith(("pg-", "patroni-"))]
    redis_rows = [n for n in ROWS if n.startswith(("redis-", "sentinel"))]
    try:
        with m.stack:
            m.start_labs(m.want(*pg_rows), m.want(*redis_rows))
            if m.pg:
                m.pg_rows()
            if m.redis:
                m.redis_rows()
            m.etcd_rows()
    except Exception as e:  # noqa: BLE001 - reported below; the labs are stopped by then
        m.notes.append(f"**aborted**: {e!r}")
        print(f"aborted: {e!r}", file=sys.stderr)
    elapsed = time.monotonic() - t0
    table = m.table()
    failed = [ln for ln in m.lines if ln.problems]
    unknown = m.only - set(ROWS)
    body = "\n\n".join([
        "## Fault matrix",
        f"`bench/fault-matrix` ({elapsed / 60:.1f} min on this machine). Configured check deadline "
        "`timeout = \"800ms\"`; every external check must end within 900 ms. External: `dbcheck explain "
        "--json` as its own process (wall time; its own `elapsed_ms` in brackets). Agent: `dbcheck-agent` "
        "on that node (interval 1 s, fall 2, rise 3), its `/health` reported verdict; time to verdict from "
        "the injection until it reported the expected verdict, polled every 100 ms (its own check duration "
        "in brackets). Faults in dbcheck's configuration (fake peers, passwords, names) reach the agent by "
        "a reload (SIGHUP).",
        table,
        *m.notes,
    ])
    print("\n" + body)
    if failed or "aborted" in " ".join(m.notes) or unknown:
        for ln in failed:
            print(f"FAILED {ln.row} [{ln.target.label}]: {'; '.join(ln.problems)}", file=sys.stderr)
        if unknown:
            print(f"unknown rows: {', '.join(sorted(unknown))}", file=sys.stderr)
        status = 1
    else:
        status = 0
    if not args.no_write and not args.only:
        from results import write_section
        write_section("faults", body)
    if status == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"kept {workdir}", file=sys.stderr)
    return status


ROWS = ["pg-wedged-postmaster", "pg-wedged-instance", "patroni-rest-hung", "patroni-rest-refused",
        "patroni-fake-garbage", "patroni-fake-truncated", "patroni-fake-huge", "patroni-fake-slow",
        "patroni-fake-trickle", "pg-max-connections", "pg-wrong-password", "pg-hba-reject", "pg-dns-patroni",
        "pg-dns-node", "pg-read-only", "pg-starting-57P03",
        "redis-wedged-replica", "sentinel-one-stale", "sentinel-one-newer", "sentinels-two-down",
        "redis-wrong-password", "sentinel-fake-garbage", "sentinel-fake-truncated", "sentinel-fake-huge",
        "sentinel-fake-slow", "sentinel-fake-trickle", "redis-dns-sentinels", "redis-loading",
        "etcd-down-before", "etcd-down-after"]

if __name__ == "__main__":
    sys.exit(main())
