"""Load clients and counters for the agent benchmark: many concurrent pollers on the agent-check
port (our own asyncio client: one TCP connection per answer, as HAProxy's agent-check), wrk on
HTTP endpoints, the agent's CPU and RSS from /proc, and the check statements/commands the
databases see.
"""

import asyncio
import json
import os
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

WRK_REPORT = Path(__file__).resolve().parent / "wrk_report.lua"
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class Load:
    """What one load window measured: answers, their latencies (seconds; wrk gives only its
    percentiles), errors by kind, and answers that were not the expected one."""

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
async def _poller(port, request, expect, stop_at, latencies, errors, unexpected):
    """Ask `request` again and again until stop_at, one connection per answer; a reply that
    does not start with `expect` is kept in `unexpected` (the first 5)."""
    loop = asyncio.get_running_loop()
    while loop.time() < stop_at:
        t0 = loop.time()
        writer = None
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 2)
            writer.write(request)
            line = await asyncio.wait_for(reader.readline(), 2)
            if not line.endswith(b"\n"):
                errors["short reply"] = errors.get("short reply", 0) + 1
            elif not line.startswith(expect):
                if len(unexpected) < 5:
                    unexpected.append(line.decode(errors="replace").strip())
                errors["unexpected"] = errors.get("unexpected", 0) + 1
            else:
                latencies.append(loop.time() - t0)
        except (OSError, asyncio.TimeoutError) as e:
            errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
        finally:
            if writer is not None:
                writer.close()


async def _poll(port, request, expect, pollers, seconds):
    latencies, errors, unexpected = [], {}, []
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await asyncio.gather(*(_poller(port, request, expect, t0 + seconds, latencies, errors, unexpected)
                           for _ in range(pollers)))
    return latencies, errors, unexpected, loop.time() - t0


def poll_agent_port(port, backend, pollers, seconds, expect=b"up"):
    """`pollers` concurrent clients asking the agent-check port for `backend` for `seconds`."""
    latencies, errors, unexpected, took = asyncio.run(
        _poll(port, f"{backend}\n".encode(), expect, pollers, seconds))
    q = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else [0.0] * 99
    return Load(len(latencies), took, q[49] * 1000, q[98] * 1000, errors, unexpected)


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
