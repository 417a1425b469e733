"""dbcheck-agent under load, on a real lab (etcd + 3 Patroni members, one agent on the leader):
answers/s and latency percentiles of the agent port at N concurrent pollers, the database's
commits/s at 1 and 100 pollers, and the agent's RSS. Prints one table; run via bench/run.

  /usr/bin/python3 bench/agent_load.py [--pollers 1000] [--seconds 10]
"""

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

from fixtures.agent import start_pg_agents  # noqa: E402
from fixtures.patroni import PatroniCluster  # noqa: E402

AGENT = REPO / "build" / "agent" / "dbcheck-agent"


async def poller(port, stop_at, latencies, errors):
    """Ask for pg_write again and again until stop_at (one connection per answer, as HAProxy)."""
    loop = asyncio.get_running_loop()
    while loop.time() < stop_at:
        t0 = loop.time()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"pg_write\n")
            line = await asyncio.wait_for(reader.readline(), 2)
            writer.close()
            if not line.endswith(b"\n"):
                errors.append("short reply")
                continue
            latencies.append(loop.time() - t0)
        except (OSError, asyncio.TimeoutError) as e:
            errors.append(type(e).__name__)


async def load(port, pollers, seconds):
    latencies, errors = [], []
    stop_at = asyncio.get_running_loop().time() + seconds
    await asyncio.gather(*(poller(port, stop_at, latencies, errors) for _ in range(pollers)))
    return latencies, errors


def commits(cluster, member):
    """Statements the health-check role has run on `member` (pg_stat_statements)."""
    with cluster.superuser_conn(member) as conn, conn.cursor() as cur:
        cur.execute("SELECT coalesce(sum(s.calls), 0) FROM pg_stat_statements s "
                    "JOIN pg_roles r ON r.oid = s.userid WHERE r.rolname = 'healthcheck'")
        return int(cur.fetchone()[0])


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pollers", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=10)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dbcheck-bench.", dir="/tmp"))
    work.chmod(0o755)
    cluster = PatroniCluster(work / "pg")
    agents = []
    try:
        cluster.start()
        agents = start_pg_agents(work / "agents", cluster, AGENT, interval="1s")
        leader = cluster.leader()
        agent = next(a for a in agents if a.name == f"agent-{leader.name}")
        rss_idle = rss_kib(agent.pid)
        rows = []
        for n in (1, 100, args.pollers):
            c0, t0 = commits(cluster, leader), time.monotonic()
            latencies, errors = asyncio.run(load(agent.agent_port, n, args.seconds))
            c1, t1 = commits(cluster, leader), time.monotonic()
            q = statistics.quantiles(latencies, n=100) if len(latencies) > 100 else [0] * 99
            rows.append((n, len(latencies) / (t1 - t0), q[49] * 1000, q[98] * 1000, max(latencies) * 1000,
                         len(errors), (c1 - c0) / (t1 - t0), rss_kib(agent.pid)))
        print(f"\ndbcheck-agent load ({args.seconds:g}s per row, one TCP connection per answer, "
              f"client: Python asyncio on the same 2 cores)")
        print(f"{'pollers':>8} {'answers/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>7} "
              f"{'db stmts/s':>13} {'agent RSS':>10}")
        for n, rate, p50, p99, mx, err, cps, rss in rows:
            print(f"{n:>8} {rate:>10.0f} {p50:>8.2f} {p99:>8.2f} {mx:>8.1f} {err:>7} {cps:>13.1f} "
                  f"{rss / 1024:>8.1f}MB")
        print(f"agent RSS idle: {rss_idle / 1024:.1f} MB")
        return 0
    finally:
        for a in agents:
            a.stop()
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
