"""dbcheck-agent under open-loop polling, part of bench/perf/run.

N pollers, each asking once a second on its own schedule (a random phase), as HAProxy's checks
of N servers do, with bench/perf/load/openloop.c: latency is counted from the scheduled send time, so
a stall of the agent counts for every ask it delayed (no coordinated omission). Rows of 100,
1,000 and 10,000 pollers on the agent-check port (connect, send the backend, read one line,
close) and on HTTP (keep-alive, and one connection per ask); per row the latency percentiles,
errors by kind, answers/s, the agent's CPU and RSS over the window, and the statements/commands
the database saw during it.

Up to PER_SOURCE pollers share one source address (127.0.0.1, as one HAProxy with 1,000 servers);
10,000 come from 127.0.0.1-10.
"""

import json
import math
import subprocess
import time
from dataclasses import dataclass

import agent_load as load

PER_SOURCE = 1000  # pollers per source address
RATE_HZ = 1.0
MODES = (  # (label, openloop --mode)
    ("agent-check port", "agent"),
    ("HTTP, keep-alive", "http-keepalive"),
    ("HTTP, one connection per ask", "http-close"),
)
# The targets, with the generator beside the agent on this 2-core machine.
P99_TARGET_MS = {1000: 1.0, 10000: 5.0}
# The agent's HTTP port holds at most this many connections in all (agent/http_server.cpp:
# k_max_connections): keep-alive pollers beyond it are refused by design.
HTTP_TOTAL_LIMIT = 4096


@dataclass
class Row:
    """One window: `pollers` in openloop mode `mode` (label `label`) from `sources` addresses;
    `r` is openloop's JSON; the agent's CPU % and RSS; the database's statements/s."""

    pollers: int
    label: str
    mode: str
    sources: int
    r: dict
    cpu_pct: float
    rss_mib: float
    db_per_s: float

    @property
    def p99_ms(self):
        return self.r["p99_us"] / 1000


def sources(pollers):
    """Source addresses for `pollers`: 127.0.0.1, then .2, ... every PER_SOURCE pollers."""
    return [f"127.0.0.{i}" for i in range(1, math.ceil(pollers / PER_SOURCE) + 1)]


def run(tool, mode, port, pollers, seconds, backend, expect, srcs, rate=RATE_HZ):
    """openloop (built at `tool`) for `seconds`; its JSON as a dict. RuntimeError if it fails."""
    argv = [str(tool), "--mode", mode, "--port", str(port), "--pollers", str(pollers), "--rate", str(rate),
            "--seconds", str(seconds), "--sources", ",".join(srcs), "--backend", backend, "--expect", expect]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    if res.returncode != 0:
        raise RuntimeError(f"openloop failed ({res.returncode}): {res.stderr.strip()}")
    return json.loads(res.stdout)


def measure(tool, agent, backend, pollers, seconds, db_count, modes=MODES):
    """One Row per (poller count, mode) against `agent` (an AgentProcess) asking for `backend`;
    db_count() is the database's statement/command counter, read before and after each window."""
    rows = []
    for n in pollers:
        for label, mode in modes:
            port = agent.agent_port if mode == "agent" else agent.http_port
            expect = "up" if mode == "agent" else "200"
            srcs = sources(n)
            c0, cpu0, t0 = db_count(), load.cpu_seconds(agent.pid), time.monotonic()
            r = run(tool, mode, port, n, seconds, backend, expect, srcs)
            c1, cpu1, t1 = db_count(), load.cpu_seconds(agent.pid), time.monotonic()
            row = Row(n, label, mode, len(srcs), r, 100 * (cpu1 - cpu0) / (t1 - t0), load.rss_mib(agent.pid),
                      (c1 - c0) / (t1 - t0))
            rows.append(row)
            print(f"  {n:>6} {label:<30} {r['answers_per_s']:>8.0f}/s p50 {r['p50_us'] / 1000:.2f} ms "
                  f"p99 {row.p99_ms:.2f} ms p99.9 {r['p999_us'] / 1000:.2f} ms "
                  f"max {r['max_us'] / 1000:.2f} ms (p99 from the send {r['sent_p99_us'] / 1000:.2f}) "
                  f"errors {r['error_total']} cpu {row.cpu_pct:.0f}%", flush=True)
    return rows


def problems(row):
    """What is wrong with `row` (a list of strings; empty when fine): any error, except
    keep-alive pollers beyond the HTTP port's total connection cap (refused by design), or no
    answer at all. Latency targets are reported, not judged: the machine is shared."""
    out = []
    if row.r["answers"] == 0:
        out.append("no answer")
    if row.r["error_total"] and not (row.mode == "http-keepalive" and row.pollers > HTTP_TOTAL_LIMIT):
        errors = {k: v for k, v in row.r["errors"].items() if v}
        out.append(f"errors {errors} (sample {row.r['sample']!r})")
    return out


def markdown(rows, title, db_label, seconds):
    """The section's table (a list of lines)."""
    out = [
        "",
        f"### dbcheck-agent under open-loop polling ({title}: {seconds} s per row, "
        f"{RATE_HZ:g} Hz per poller)",
        "",
        "`bench/perf/load/openloop.c`: N pollers, each asking once a second on its own schedule "
        "(random phase), "
        "as HAProxy's checks of N servers do; one thread, epoll, beside the agent on the same 2 cores. "
        "Latency runs from the **scheduled** send time, so a stall counts for every ask it delayed (no "
        "coordinated omission); it includes the generator's own lag (`late`: asks sent more than 1 ms "
        "after their time, when the shared cores ran something else), which `p99 sent` leaves out (from "
        "the actual send: the agent's share). Agent-check port: connect, send the backend name, read one "
        "line, close (as HAProxy's agent-check). HTTP keep-alive: one connection per poller, reused; one "
        "connection per ask: `Connection: close`. "
        f"Up to {PER_SOURCE} pollers per source address (127.0.0.1; 10,000 from 127.0.0.1-10). "
        f"Targets: p99 ≤ 1 ms at 1,000 pollers, ≤ 5 ms at 10,000, 0 errors. {db_label}",
        "",
        "| pollers | sources | endpoint | answers/s | p50 ms | p99 ms | p99.9 ms | max ms | p99 sent ms "
        "| errors | late | agent CPU % | agent RSS MiB | DB stmts/s |",
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: "
        "| ---: |",
    ]
    for row in rows:
        r = row.r
        target = P99_TARGET_MS.get(row.pollers)
        mark = "" if target is None else (" ✓" if row.p99_ms <= target else " ✗")
        errors = ", ".join(f"{k} {v}" for k, v in r["errors"].items() if v) or "0"
        out.append(f"| {row.pollers} | {row.sources} | {row.label} | {r['answers_per_s']:.0f} | "
                   f"{r['p50_us'] / 1000:.2f} | {row.p99_ms:.2f}{mark} | {r['p999_us'] / 1000:.2f} | "
                   f"{r['max_us'] / 1000:.2f} | {r['sent_p99_us'] / 1000:.2f} | {errors} | "
                   f"{r['late_sends']} | {row.cpu_pct:.1f} | {row.rss_mib:.1f} | {row.db_per_s:.1f} |")
    return out
