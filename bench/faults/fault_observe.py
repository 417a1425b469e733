"""The fault matrix's observations and table: the limits every row is judged by, one agent's
/health polled while a row runs, the expected and observed verdicts of one backend (Target,
Line) with its anchor's answer, the secret scan and the Markdown table.
"""

import time
from dataclasses import dataclass, field

# The repository root (the lab package) is on PYTHONPATH: bench/faults/run sources scripts/pythonpath.
from lab import patroni as patroni_fx, redis as redis_fx
from lab.periodic import Periodic

TIMEOUT_S, MARGIN_S = 0.8, 0.1    # the configured check deadline and the margin
CHECK_CAP_S = TIMEOUT_S + 5       # a check process still running then is killed: a hang
# The anchors end by their own timeouts (lab/anchors.py: connect 1 s, check 1 s; two connects
# for the Sentinel + ROLE check); past this the row goes on without their answer.
ANCHOR_CAP_S = 4
ROW_CAP_S = 150                   # hard wall-clock cap of one row (SIGALRM)
AGENT_SETTINGS = {"interval": "1s", "fall": 2, "rise": 3}  # haproxy-examples/dbcheck-agent.toml
VERDICT_WAIT_S = 15               # bound on the agent's time to verdict
HEAL_WAIT_S = 40                  # bound on "healthy again" after the fault is removed
WRONG_PG_PASSWORD, WRONG_REDIS_PASSWORD = "wrong-Secret-4711", "wrong-Redis-4711"
SECRETS = {patroni_fx.HC_PASSWORD, patroni_fx.SUPERUSER_PASSWORD, patroni_fx.REPLICATION_PASSWORD,
           patroni_fx.APP_PASSWORD, redis_fx.HC_PASSWORD, redis_fx.ADMIN_PASSWORD, WRONG_PG_PASSWORD,
           WRONG_REDIS_PASSWORD}
UNRESOLVABLE = "nonexistent.invalid"


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
    anchor: object = None       # lab.anchors.Answer, or a note why there is none
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


def anchor_cell(line):
    """What line's anchor answered ("/primary 200 (UP)", "ROLE master: timeout (DOWN)"), or
    why it has no answer."""
    a = line.anchor
    return "—" if a is None else short(a if isinstance(a, str) else a.cell(), 120)


def anchor_cells(line):
    """The table's two anchor cells of `line`: Patroni's, Sentinel + ROLE's ("—" for the other
    engine's)."""
    cell = anchor_cell(line)
    return (cell, "—") if line.target.backend.startswith("pg") else ("—", cell)


def table(lines):
    """The Markdown table of `lines`, one table line each."""
    head = ("| row | fault | backend | external verdict | external reason | time | agent verdict | "
            "agent reason | agent time to verdict | Patroni /primary or /replica | Sentinel + ROLE |")
    out = [head, "| --- | --- | --- | --- | --- | ---: | --- | --- | ---: | --- | --- |"]
    for ln in lines:
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
        patroni, sentinel = anchor_cells(ln)
        out.append(f"| {ln.row}{flag} | {short(ln.fault, 120)} | {ln.target.label} | {ext} | {reason} | "
                   f"{t} | {agent} | {areason} | {ttv} | {patroni} | {sentinel} |")
    return "\n".join(out)
