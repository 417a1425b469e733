"""The cost of one external check: dbcheck beside its I/O floor (bench/perf/floor/, the same
questions asked by a minimal C program) and beside the hand-rolled script an operator would
write (bench/perf/scripts/), all three run N times round-robin against the same live lab, so that
drift on the shared machine hits every variant alike.

Wall time is measured around fork+exec+wait from Python (the same overhead for all three);
CPU time is the child's user+sys from os.wait4(), which includes the children it waited for
(the script's psql, curl and redis-cli).

The targets for the process itself, each pair from the same interleaved run (CPU
medians): a Redis check within 2× redis_floor; a PostgreSQL check within 1.2× pg_http_floor
(libpq and a hand-written HTTP GET: the least a C program loads); `dbcheck --help` within 2× an
empty C program (bench/perf/floor/empty.c). TARGETS and target_lines().
"""

import os
import select
import shlex
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "bench" / "perf" / "scripts"
# The C programs of bench/perf/floor/ (compiled by bench/perf/main.py with `cc -O2`): name -> (source,
# pkg-config packages).
FLOORS = {
    "pg_floor": ("floor/pg_floor.c", ["libpq", "libcurl"]),
    "pg_http_floor": ("floor/pg_http_floor.c", ["libpq"]),
    "redis_floor": ("floor/redis_floor.c", ["hiredis"]),
    "empty": ("floor/empty.c", []),
}
# The targets: (engine, variant, reference variant, the most variant/reference may cost in CPU).
TARGETS = [
    ("Redis", "dbcheck", "floor", 2.0),
    ("PostgreSQL", "dbcheck", "floor, libpq + own GET", 1.2),
    ("PostgreSQL", "dbcheck --help", "empty C program", 2.0),
]


class CheckFailed(RuntimeError):
    """A variant did not say "writer" (exit code not 0) for the node that is the writer."""


@dataclass
class Variant:
    """One way of checking the writer: its argv and its whole environment (nothing inherited,
    as under HAProxy). Secrets travel in `env` or in files it names, never in argv."""

    name: str
    argv: list
    env: dict
    walls: list = field(default_factory=list)
    cpus: list = field(default_factory=list)

    def run_once(self, timeout=10):
        """Run it once; record and return (wall s, CPU s). CheckFailed (with its output) unless
        it exits 0 within `timeout`."""
        t0 = time.perf_counter()
        p = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, env=self.env, cwd="/")
        try:
            out = _read_bounded(p, t0 + timeout)
        finally:
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise CheckFailed(f"{self.name}: exit {p.returncode} for the writer: {out.strip()[:300]!r} "
                              f"({shlex.join(map(str, self.argv))})")
        self.walls.append(wall)
        self.cpus.append(usage.ru_utime + usage.ru_stime)
        return wall, self.cpus[-1]


def _read_bounded(p, deadline):
    """All of p's output (until it closes its stdout); p is killed (by its PID) when that has not
    happened by `deadline`. The caller reaps p: communicate() would, and lose its rusage."""
    chunks = []
    with p.stdout:
        while True:
            ready, _, _ = select.select([p.stdout], [], [], max(0.0, deadline - time.perf_counter()))
            if not ready:
                p.kill()
                chunks.append(b"[killed at the deadline]")
                break
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def measure(variants, rounds):
    """One untimed warm-up round (page cache, connection setup on the servers), then `rounds`
    rounds; each round runs every variant once, starting one later in the list each time.
    The first CheckFailed is raised."""
    for v in variants:
        v.run_once()
        v.walls.clear()
        v.cpus.clear()
    for r in range(rounds):
        for i in range(len(variants)):
            variants[(r + i) % len(variants)].run_once()
    return variants


def pg_variants(dbcheck_bin, config, floors, pgpass, leader):
    """dbcheck (as HAProxy runs it), pg_floor (libpq + libcurl), pg_http_floor (libpq + its own
    GET) and bench/perf/scripts/pg_check.sh, each asking whether Patroni member `leader` is the writer;
    and `dbcheck --help` beside an empty C program, the cost of starting alone. `config` is a
    dbcheck.toml with backend pg_write, `pgpass` a 0600 libpq password file for the check user,
    `floors` {name: path} of FLOORS."""
    host, port = leader.pg_addr.split(":")
    base = {"PATH": "/usr/bin:/bin"}
    haproxy_env = {**base, "HAPROXY_PROXY_NAME": "pg_write", "HAPROXY_SERVER_ADDR": host,
                   "HAPROXY_SERVER_PORT": port}
    floor_args = [host, port, "appdb", "healthcheck", f"{leader.rest_url}/cluster"]
    return [
        Variant("dbcheck", [str(dbcheck_bin), "--config", str(config), "NOT_USED", "NOT_USED", host, port],
                haproxy_env),
        Variant("floor", [str(floors["pg_floor"]), *floor_args], {**base, "PGPASSFILE": str(pgpass)}),
        Variant("floor, libpq + own GET", [str(floors["pg_http_floor"]), *floor_args],
                {**base, "PGPASSFILE": str(pgpass)}),
        Variant("script", [str(SCRIPTS / "pg_check.sh"), "NOT_USED", "NOT_USED", host, port],
                {**base, "PGPASSFILE": str(pgpass), "PATRONI_URL": leader.rest_url}),
        Variant("dbcheck --help", [str(dbcheck_bin), "--help"], base),
        Variant("empty C program", [str(floors["empty"])], base),
    ]


def redis_variants(dbcheck_bin, config, floors, cluster, master, user, password, master_name):
    """dbcheck (as HAProxy runs it), redis_floor and bench/perf/scripts/redis_check.sh, each asking
    whether data node `master` of RedisSentinelCluster `cluster` is the writer. `config` is a
    dbcheck.toml with backend redis_write, `floors` {name: path} of FLOORS."""
    host, port = master.addr.split(":")
    base = {"PATH": "/usr/bin:/bin"}
    haproxy_env = {**base, "HAPROXY_PROXY_NAME": "redis_write", "HAPROXY_SERVER_ADDR": host,
                   "HAPROXY_SERVER_PORT": port}
    sentinels = cluster.sentinels()
    return [
        Variant("dbcheck", [str(dbcheck_bin), "--config", str(config), "NOT_USED", "NOT_USED", host, port],
                haproxy_env),
        Variant("floor", [str(floors["redis_floor"]), user, master_name, port,
                          *(str(s.port) for s in sentinels)],
                {**base, "REDISCLI_AUTH": password}),
        Variant("script", [str(SCRIPTS / "redis_check.sh"), "NOT_USED", "NOT_USED", host, port],
                {**base, "REDISCLI_AUTH": password, "MASTER_NAME": master_name,
                 "SENTINELS": " ".join(s.addr for s in sentinels)}),
    ]


def p90(values):
    """90th percentile (inclusive method: defined for 2+ values, exact at the ends)."""
    return statistics.quantiles(values, n=10, method="inclusive")[8] if len(values) > 1 else values[0]


def summarize(variants):
    """{name: (wall p50, wall p90, CPU p50, CPU p90)} in milliseconds."""
    return {v.name: tuple(1000 * f(x) for x in (v.walls, v.cpus) for f in (statistics.median, p90))
            for v in variants}


def target_lines(ext_rows):
    """Markdown lines: each of TARGETS measured in `ext_rows` ({engine: summarize()}), as
    CPU p50 of the variant / CPU p50 of its reference, both from the same interleaved run."""
    out = []
    for engine, name, ref, most in TARGETS:
        rows = ext_rows.get(engine, {})
        if name in rows and ref in rows and rows[ref][2] > 0:
            ratio = rows[name][2] / rows[ref][2]
            out.append(f"- {engine}: {name} {rows[name][2]:.2f} ms CPU = {ratio:.2f}× {ref} "
                       f"({rows[ref][2]:.2f} ms) {'✓' if ratio <= most else '✗'} (target ≤ {most:g}×)")
    return out
