"""The fault matrix's runner: the shared labs (any lab of lab/protocol.py, with
one dbcheck-agent per node), the targets on their primary and replica, and one row measured
from injection to "healthy again", each external check with its anchor asked beside it
(lab/anchors.py); plus the fault helpers rows share (a fault in dbcheck's own
configuration, fake peers). The rows themselves are in bench/faults/fault_rows_*.py.
"""

import functools
import json
import signal
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

# The repository root (the lab package) is on PYTHONPATH: bench/faults/run sources scripts/pythonpath.
from lab import anchors, redis as redis_fx
from lab.agent import start_pg_agents, start_redis_agents
from lab.binaries import agent_bin, dbcheck_bin
from lab.dbcheck import assert_in_time, run_dbcheck, write_dbcheck_config, write_redis_config
from lab.fake_http import FakeHttp
from lab.fake_resp import FakeResp
from lab.patroni import PatroniCluster
from lab.procs import wait_until
from lab.redis import RedisSentinelCluster

from fault_observe import (AGENT_SETTINGS, ANCHOR_CAP_S, CHECK_CAP_S, HEAL_WAIT_S, MARGIN_S, ROW_CAP_S,
                           TIMEOUT_S, VERDICT_WAIT_S, AgentWatch, Line, Target, anchor_cell, check_secrets,
                           matches, reported, short)

# $DBCHECK_BIN / $DBCHECK_AGENT_BIN override them, as for the tests: a fix can be measured from
# another build dir.
DBCHECK = dbcheck_bin()
AGENT = agent_bin()


@dataclass(frozen=True)
class Engine:
    """What the runner needs to know of one shared lab's engine."""

    cluster: type          # the lab class (lab/protocol.py protocol)
    start_agents: object   # lab.agent start_*_agents(workdir, cluster, agent_bin, **settings)
    write_config: object   # lab.dbcheck write_*_config(dir, cluster, **kw)
    write_backend: str
    read_backend: str
    primary_role: str      # how the table names the primary


ENGINES = {
    "pg": Engine(PatroniCluster, start_pg_agents, write_dbcheck_config, "pg_write", "pg_read", "leader"),
    "redis": Engine(RedisSentinelCluster, start_redis_agents, write_redis_config, "redis_write", "redis_read",
                    "master"),
}


class RowHung(Exception):
    """A row went past ROW_CAP_S (raised in the main thread by SIGALRM)."""


def _alarm(signum, frame):
    raise RowHung(f"row still running after {ROW_CAP_S}s")


def install_alarm():
    """Make SIGALRM (armed by Matrix.row) raise RowHung in the main thread."""
    signal.signal(signal.SIGALRM, _alarm)


class Matrix:
    """Runs rows against the labs and collects the table lines."""

    def __init__(self, workdir):
        self.workdir = Path(workdir)
        self.lines, self.notes = [], []
        self.stack = ExitStack()
        self.labs = {}    # engine -> started lab
        self.agents = {}  # engine -> {node name: AgentProcess}
        self.private_labs = []  # labs a row started itself, whose nodes get the anchors too

    @property
    def pg(self):
        return self.labs.get("pg")

    @property
    def redis(self):
        return self.labs.get("redis")

    # ---------------------------------------------------------------- labs
    def start_labs(self, engines):
        """The shared labs of `engines`, started in parallel; their agents (one per node) after."""
        errors = []

        def start(engine):
            try:
                lab = ENGINES[engine].cluster(self.workdir / engine)
                self.stack.callback(lab.stop)
                self.labs[engine] = lab.start()
            except BaseException as e:  # noqa: BLE001 - re-raised below
                errors.append(e)
        threads = [threading.Thread(target=start, args=(e,)) for e in ENGINES if e in engines]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
        if errors or any(t.is_alive() for t in threads):
            raise RuntimeError(f"lab start failed: {errors!r}")
        print(f"labs up in {time.monotonic() - t0:.1f}s", flush=True)
        for engine in ENGINES:  # pg's agents first, as the labs were started
            lab = self.labs.get(engine)
            if lab:
                agents = ENGINES[engine].start_agents(self.workdir / f"{engine}-agents", lab, AGENT,
                                                      **AGENT_SETTINGS)
                self.agents[engine] = {a.name.removeprefix("agent-"): a for a in agents}
                for a in agents:
                    self.stack.callback(a.stop)

    def config(self, engine, name, **kw):
        """A dbcheck config for lab `engine` with `kw` (written under configs/<name>)."""
        write = ENGINES[engine].write_config
        return write(self.workdir / "configs" / name, self.labs[engine], owner=None, timeout="800ms", **kw)

    def targets(self, engine, writer=True, reader=False, **kw):
        """Targets (Target(**kw)) on the primary the manager names (writer) and/or the first
        replica (reader) of lab `engine`, each with its node's agent."""
        e, lab = ENGINES[engine], self.labs[engine]
        primary = lab.wait_primary()
        replica = lab.replicas(primary)[0]
        chosen = (([(e.write_backend, primary, e.primary_role)] if writer else [])
                  + ([(e.read_backend, replica, "replica")] if reader else []))
        agents = self.agents[engine]
        return [Target(backend, node.addr, f"{backend} @ {node.name} ({role})", agents[node.name], **kw)
                for backend, node, role in chosen]

    def base_config(self, target):
        return self.config("redis" if target.backend.startswith("redis") else "pg", "base")

    # ---------------------------------------------------------------- one row
    def anchor(self, target):
        """What the anchor of target's engine (lab/anchors.py) answers for its node now, with
        the anchors' own settings (the real Patroni REST API, the first Sentinel, the check
        user's right password): an anchors.Answer, or a note saying why there is none."""
        writer = target.backend.endswith("_write")
        if target.backend.startswith("pg"):
            labs = [lab for lab in [*self.labs.values(), *self.private_labs]
                    if isinstance(lab, PatroniCluster)]
            member = next((m for lab in labs for m in lab.members() if m.pg_addr == target.addr), None)
            if member is None or member.scheme != "http":
                return "n/a: not a member of a Patroni lab" if member is None else "n/a: REST API over TLS"
            return anchors.patroni(f"{member.ip}:{member.rest_port}", "/primary" if writer else "/replica")
        if self.redis is None:
            return "n/a: no Sentinel lab"
        if writer:
            return anchors.redis_writer(target.addr, self.redis.sentinels()[0].addr, redis_fx.MASTER_NAME,
                                        redis_fx.HC_USER, redis_fx.HC_PASSWORD)
        return anchors.redis_reader(target.addr, redis_fx.HC_USER, redis_fx.HC_PASSWORD)

    def _anchor_beside(self, line):
        """A thread asking line.target's anchor (into line.anchor) while the external check
        runs: both answer for the same instant, and the anchor adds no time to the row unless
        it outlasts the check. Evidence only: what it answers never fails the row."""
        def ask():
            try:
                line.anchor = self.anchor(line.target)
            except Exception as e:  # noqa: BLE001 - a broken anchor is noted, not a failing row
                line.anchor = f"n/a: {short(repr(e), 80)}"
        thread = threading.Thread(target=ask, name=f"anchor-{line.target.label}", daemon=True)
        thread.start()
        return thread

    def external(self, line, config):
        """Run `dbcheck explain --json` once for line.target, its anchor beside it; record them
        and the check's problems."""
        anchor = self._anchor_beside(line)
        try:
            self._external(line, config)
        finally:
            anchor.join(ANCHOR_CAP_S)
            if line.anchor is None:
                line.anchor = f"n/a: no answer within {ANCHOR_CAP_S:.0f}s"

    def _external(self, line, config):
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
        # The integration tests' deadline rule: by the check's own clock (elapsed_ms), the
        # process's exec and exit being what a loaded machine stretches, not the check.
        try:
            assert_in_time(line.ext, TIMEOUT_S, MARGIN_S)
        except AssertionError as e:
            line.problems.append(f"external check: {short(str(e), 300)}")
        # HAProxy reads the exit status alone: 0 passes (state up), 1 fails. Anything else after
        # a report (a crash on the way out, a signal) is a broken check whatever the JSON said.
        want_rc = 0 if line.ext.state == "up" else 1
        if line.ext.rc != want_rc:
            line.problems.append(f"external check exited {line.ext.rc} after a verdict of "
                                 f"{line.ext.state}: HAProxy reads {want_rc}")
        got = (line.ext.state, line.ext.failure)
        if not matches(got, t.expect):
            line.problems.append(f"external verdict {got} != expected {t.expect}")

    def row(self, name, fault, targets, inject, config=None, settle=None):
        """One row: start watching each target's agent, enter `inject()` (a context manager:
        the fault is in force inside it), run the external check of each target with `config`
        (default: the lab's own), wait (bounded) for each agent's expected verdict, leave the
        block (the fault is removed), then wait until every target is healthy again, for the
        agent and (with the lab's config) for the external check, and call `settle()`."""
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
            took = f" in {line.anchor.seconds * 1000:.0f}ms" if hasattr(line.anchor, "seconds") else ""
            print(f"   {line.target.label}: external {ext}; agent {agent} {ttv}; anchor "
                  f"{anchor_cell(line)}{took}"
                  + (f"  PROBLEMS: {line.problems}" if line.problems else ""), flush=True)
        print(f"   ({time.monotonic() - t_row:.1f}s)", flush=True)

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

    @staticmethod
    @contextmanager
    def entered(stack, cm):
        """Enter `cm` on `stack` (kept open past the row: the fault outlives it)."""
        yield stack.enter_context(cm)

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

    def config_row(self, name, fault, targets, engine, **kw):
        """A fault that lives in dbcheck's configuration (a wrong password, a fake peer's
        address): the external check runs with it, the agent is reloaded with it."""
        config = self.config(engine, name, **kw)
        self.row(name, fault, targets, functools.partial(self.reconfigured, targets, **kw), config=config)

    def fake_peer_row(self, name, engine, what, mode, kind, how, key):
        """A config row: three fake peers in `mode` (FakeHttp for lab "pg", FakeResp for
        "redis") replace the manager's members in the config (`key`: patroni_urls or
        sentinels); the writer is checked and expected down with failure `kind`."""
        with ExitStack() as fakes:
            cls = FakeHttp if engine == "pg" else FakeResp
            peers = [fakes.enter_context(cls(mode)) for _ in range(3)]
            addrs = [p.url if engine == "pg" else p.addr for p in peers]
            self.config_row(name, f"{what}: {how}", self.targets(engine, expect=("down", kind)), engine,
                            **{key: addrs})
