"""Load clients and counters for the agent benchmark: many concurrent pollers on the agent-check
port (our own C client, bench/perf/load/agent_poll.c: one TCP connection per answer, as HAProxy's
agent-check), wrk on
HTTP endpoints, the agent's CPU and RSS from /proc, and the check statements/commands the
databases see.
"""

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

WRK_REPORT = Path(__file__).resolve().parent / "wrk_report.lua"
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class Load:
    """What one load window measured: answers, their latency percentiles, errors by kind, and
    a sample of the answers that were not the expected one."""

    answers: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: dict = field(default_factory=dict)
    unexpected: list = field(default_factory=list)

    @property
    def rate(self):
        return self.answers / self.seconds

    def error_count(self, ignore=()):
        return sum(n for kind, n in self.errors.items() if kind not in ignore)


# ------------------------------------------------------------------ agent-check port
def poll_agent_port(client, port, backend, pollers, seconds, expect="up"):
    """`pollers` concurrent clients asking the agent-check port for `backend` for `seconds`,
    with bench/perf/load/agent_poll.c (built at `client`): epoll in C, so that the client's lag is
    not mistaken for the agent's (the agent answers a line that has not arrived within 100 ms
    with its default). A reply not starting with `expect` counts as "unexpected"."""
    res = subprocess.run([str(client), str(port), backend, str(pollers), str(seconds), expect],
                         capture_output=True, text=True, timeout=seconds + 30)
    if res.returncode != 0:
        raise RuntimeError(f"agent_poll failed ({res.returncode}): {res.stderr.strip()}")
    r = json.loads(res.stdout)
    errors = {k: r[k] for k in ("connect", "timeout", "short", "unexpected") if r[k]}
    return Load(r["answers"], r["seconds"], r["p50_us"] / 1000, r["p99_us"] / 1000, errors,
                [r["sample"]] if r["sample"] else [])


# ------------------------------------------------------------------ HTTP (wrk)
def wrk(url, connections, seconds, close=False):
    """wrk -c N -t min(2, N) -d S --latency on `url` (with `Connection: close` when `close`).
    Its errors come back by kind: connect, read (for a server that ends every answer by
    closing, one per answer), write, status (non-2xx/3xx), timeout (no answer in 2 s).
    RuntimeError if wrk itself fails."""
    argv = ["wrk", "-c", str(connections), "-t", str(min(2, connections)), "-d", f"{seconds}s", "--latency",
            "-s", str(WRK_REPORT)]
    if close:
        argv += ["-H", "Connection: close"]
    res = subprocess.run(argv + [url], capture_output=True, text=True, timeout=seconds + 30)
    lines = [line for line in res.stdout.splitlines() if line.startswith("{")]
    if res.returncode != 0 or not lines:
        raise RuntimeError(f"wrk failed ({res.returncode}): {res.stderr.strip() or res.stdout.strip()}")
    r = json.loads(lines[-1])
    errors = {k: r[k] for k in ("connect", "read", "write", "status", "timeout") if r[k]}
    return Load(r["requests"], r["duration_us"] / 1e6, r["p50_us"] / 1000, r["p99_us"] / 1000, errors)


# ------------------------------------------------------------------ counters
def cpu_seconds(pid):
    """User + system CPU seconds `pid` has used (/proc/<pid>/stat utime + stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_mib(pid):
    """Resident set size of `pid` in MiB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pg_check_statements(cluster, role="healthcheck"):
    """Statements `role` has run so far on every member of PatroniCluster `cluster`, summed
    (pg_stat_statements counts each statement as it finishes)."""
    total = 0
    for m in cluster.members():
        with cluster.superuser_conn(m) as conn, conn.cursor() as cur:
            cur.execute("SELECT coalesce(sum(s.calls), 0) FROM pg_stat_statements s "
                        "JOIN pg_roles r ON r.oid = s.userid WHERE r.rolname = %s", (role,))
            total += int(cur.fetchone()[0])
    return total


def redis_commands(cluster, node):
    """Commands data node `node` of RedisSentinelCluster `cluster` has processed so far
    (INFO stats total_commands_processed: the checks', Sentinel's and replication's)."""
    for line in cluster.admin(node, "INFO", "stats").splitlines():
        if line.startswith("total_commands_processed:"):
            return int(line.split(":")[1])
    raise RuntimeError("INFO stats has no total_commands_processed")
