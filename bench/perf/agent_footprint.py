#!/usr/bin/env python3
"""dbcheck-agent's footprint at rest: memory and CPU of one agent probing at
`interval = 1s` while 10 pollers each ask its agent-check port and its HTTP endpoint once a
second (what a few HAProxy processes checking a server do).

Memory comes from /proc/<pid>/smaps_rollup (RSS, PSS, private dirty) and, with --detail, from
/proc/<pid>/smaps mapping by mapping: the main heap, glibc's per-thread malloc arenas (64 MiB
aligned anonymous regions), the live threads' stacks (found by each thread's stack pointer in
/proc/<pid>/task/<tid>/syscall), other anonymous memory, and each file (the agent's binary,
each library). CPU: user + system ticks of /proc/<pid>/stat over the window.

Standalone, it starts the lab itself (the lab package: etcd + 3 Patroni members,
or 2 Redis nodes + 3 Sentinels, one agent per node) and measures the agent of the primary and,
for PostgreSQL, the floor beside it (bench/perf/floor/pg_resident.c: libpq alone, connected):

  . scripts/pythonpath
  DBCHECK_AGENT_BIN=build-mem/agent/dbcheck-agent python3 bench/perf/agent_footprint.py [--engine pg|redis]
      [--seconds 60] [--detail]

bench/perf/main.py runs it as its "agent footprint" part (10 s windows in --smoke mode).
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024
ARENA_ALIGN = 64 << 20  # glibc's HEAP_MAX_SIZE on 64-bit: each non-main arena's heap is aligned to it
_http = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class Footprint:
    """One agent's memory (KiB) and CPU over a polling window."""

    engine: str
    rss_kib: int
    pss_kib: int
    private_dirty_kib: int
    hwm_kib: int
    vsz_kib: int
    threads: int
    cpu_percent: float
    seconds: float
    answers: int
    errors: int
    regions: dict = field(default_factory=dict)  # kind -> [count, rss KiB, private dirty KiB, size KiB]


# ------------------------------------------------------------------ /proc readers
def cpu_ticks(pid):
    """utime + stime of `pid`, in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def status_fields(pid):
    """/proc/<pid>/status as {key: first word of the value}."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        out[key] = value.split()[0] if value.split() else ""
    return out


def rollup(pid):
    """/proc/<pid>/smaps_rollup as {field: KiB}."""
    out = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 2 and parts[1].isdigit():
            out[parts[0].rstrip(":")] = int(parts[1])
    return out


def thread_stack_pointers(pid):
    """{tid: stack pointer} of every thread of `pid` (/proc/<pid>/task/<tid>/syscall: the
    second-to-last field; a running thread reports only 'running' and is left out)."""
    sps = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            parts = (task / "syscall").read_text().split()
        except OSError:
            continue
        if len(parts) >= 3:
            sps[int(task.name)] = int(parts[-2], 16)
    return sps


def mappings(pid):
    """Every mapping of /proc/<pid>/smaps: dicts with start, end, perms, path and the KiB
    fields (Rss, Pss, Private_Dirty, ...)."""
    maps, cur = [], None
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split(None, 5)
        if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
            start, end = (int(x, 16) for x in head[0].split("-"))
            cur = dict(start=start, end=end, perms=head[1], path=head[5] if len(head) > 5 else "")
            maps.append(cur)
        elif cur is not None and len(head) >= 2 and head[1].isdigit():
            cur[head[0].rstrip(":")] = int(head[1])
    return maps


def classify(pid):
    """{kind: [mappings, RSS KiB, private dirty KiB, size KiB]} of `pid`'s memory: '[heap]'
    (the main malloc arena), 'malloc arenas' (64 MiB-aligned anonymous heaps and their
    reserve), 'thread stacks (live)' (the mapping holding a thread's stack pointer, other than
    the main thread's [stack]), 'other anonymous' (mmap'd large blocks, stacks glibc keeps
    cached for new threads, libraries' anonymous data) and each mapped file by base name."""
    sps = thread_stack_pointers(pid)
    kinds = {}
    maps = mappings(pid)
    arena_starts = {m["start"] for m in maps if not m["path"] and m["start"] % ARENA_ALIGN == 0
                    and m["perms"].startswith("rw")}
    arena_end = {}
    for m in maps:  # an arena heap is its rw part plus the ---p reserve right after it
        if m["start"] in arena_starts:
            arena_end[m["start"]] = m["start"] + ARENA_ALIGN
    for m in maps:
        path = m["path"]
        if path.startswith("["):
            kind = path if path in ("[heap]", "[stack]") else "kernel ([vdso], [vvar], ...)"
        elif path:
            kind = os.path.basename(path.split(" (deleted)")[0])
        elif any(s <= m["start"] < e for s, e in arena_end.items()):
            kind = "malloc arenas"
        elif any(m["start"] <= sp < m["end"] for sp in sps.values()):
            kind = "thread stacks (live)"
        else:
            kind = "other anonymous"
        k = kinds.setdefault(kind, [0, 0, 0, 0])
        k[0] += 1
        k[1] += m.get("Rss", 0)
        k[2] += m.get("Private_Dirty", 0)
        k[3] += m.get("Size", 0)
    return kinds


# ------------------------------------------------------------------ pollers
class Pollers:
    """`n` threads, each asking the agent-check port for `backend` and GET /backend/<backend>
    on the HTTP port once a second, until stop()."""

    def __init__(self, n, agent_port, http_port, backend, host="127.0.0.1"):
        self.n, self.args = n, (agent_port, http_port, backend, host)
        self.answers = self.errors = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = []

    def _one(self, offset):
        agent_port, http_port, backend, host = self.args
        url = f"http://{host}:{http_port}/backend/{backend}"
        next_at = time.monotonic() + offset
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            next_at += 1.0
            ok = 0
            try:
                with socket.create_connection((host, agent_port), timeout=2) as s:
                    s.sendall(f"{backend}\n".encode())
                    ok += s.recv(4096).endswith(b"\n")
                with _http.open(url, timeout=2) as r:
                    r.read()
                    ok += 1
            except OSError:
                pass
            with self._lock:
                self.answers += ok
                self.errors += 2 - ok

    def start(self):
        for i in range(self.n):
            t = threading.Thread(target=self._one, args=(i / self.n,), daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(5)


def window(label, pid, seconds, detail=False, counts=lambda: (0, 0)):
    """A Footprint of process `pid` over `seconds`: its CPU over the window, its memory at the
    end; `counts()` gives (answers, errors) so far, counted across the window."""
    a0, e0 = counts()
    c0, t0 = cpu_ticks(pid), time.monotonic()
    time.sleep(seconds)
    c1, t1 = cpu_ticks(pid), time.monotonic()
    a1, e1 = counts()
    r, st = rollup(pid), status_fields(pid)
    regions = classify(pid) if detail else {}
    return Footprint(label, r["Rss"], r["Pss"], r["Private_Dirty"], int(st["VmHWM"]), int(st["VmSize"]),
                     int(st["Threads"]),
                     100 * (c1 - c0) / CLK_TCK / (t1 - t0), t1 - t0, a1 - a0, e1 - e0, regions)


def measure(engine, pid, agent_port, http_port, backend, seconds, pollers=10, detail=False):
    """A Footprint of agent `pid` over `seconds` with `pollers` pollers (they start 2 s before
    the window, so their first connections are not in it); memory read at the window's end."""
    p = Pollers(pollers, agent_port, http_port, backend).start()
    try:
        time.sleep(2)
        return window(engine, pid, seconds, detail, counts=lambda: (p.answers, p.errors))
    finally:
        p.stop()


# ------------------------------------------------------------------ report
def table(rows):
    """Markdown table of Footprints."""
    out = ["| engine | RSS MiB | PSS MiB | private dirty MiB | peak RSS MiB | virtual MiB | threads | "
           "CPU % | window s | answers | errors |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for f in rows:
        out.append(f"| {f.engine} | {f.rss_kib / 1024:.1f} | {f.pss_kib / 1024:.1f} | "
                   f"{f.private_dirty_kib / 1024:.1f} | {f.hwm_kib / 1024:.1f} | {f.vsz_kib / 1024:.0f} | "
                   f"{f.threads} | {f.cpu_percent:.2f} | {f.seconds:.0f} | {f.answers} | {f.errors} |")
    return out


def detail_table(f, top=80):
    """Markdown table of the regions of Footprint `f`, largest RSS first."""
    out = [f"{f.engine}, by mapping (largest RSS first):", "",
           "| region | mappings | RSS KiB | private dirty KiB | size KiB |",
           "| --- | ---: | ---: | ---: | ---: |"]
    rows = sorted(f.regions.items(), key=lambda kv: -kv[1][1])
    for kind, (n, rss, dirty, size) in rows[:top]:
        out.append(f"| {kind} | {n} | {rss} | {dirty} | {size} |")
    rest = rows[top:]
    if rest:
        out.append(f"| ({len(rest)} more) | {sum(r[1][0] for r in rest)} | {sum(r[1][1] for r in rest)} | "
                   f"{sum(r[1][2] for r in rest)} | {sum(r[1][3] for r in rest)} |")
    return out


# ------------------------------------------------------------------ the floor
def libpq_floor(work, primary, seconds, detail):
    """The Footprint of bench/perf/floor/pg_resident.c (libpq alone, one kept connection to Patroni
    member `primary`, one query a second) over `seconds`: what no PostgreSQL agent built on
    Debian's libpq can go under. Stopped (by PID) at the end."""
    from lab.patroni import HC_PASSWORD, HC_USER
    from main import BUILD_BENCH, build_tools
    tool = build_tools(BUILD_BENCH)["pg_resident"]
    pgpass = work / "floor.pgpass"
    pgpass.write_text(f"*:*:*:{HC_USER}:{HC_PASSWORD}\n")
    pgpass.chmod(0o600)
    host, port = primary.pg_addr.split(":")
    proc = subprocess.Popen([str(tool), host, port, "appdb", HC_USER],
                            env={"PATH": "/usr/bin:/bin", "PGPASSFILE": str(pgpass)})
    try:
        time.sleep(2)  # connected and asked, as the agent was before its window
        if proc.poll() is not None:
            raise RuntimeError(f"pg_resident exited {proc.returncode} (its reason is above)")
        return window("floor: libpq alone, connected (bench/perf/floor/pg_resident.c)", proc.pid, seconds,
                      detail)
    finally:
        proc.terminate()
        proc.wait()


# ------------------------------------------------------------------ standalone: own lab
def run_lab(engine, work, agent_bin, seconds, detail):
    """Start the lab of `engine` ('pg' or 'redis') under `work`, one agent per node at
    interval 1s, measure the primary's agent (and, for 'pg', the libpq floor beside it): a list
    of Footprints; everything stopped (by PID) at the end."""
    from lab.agent import start_pg_agents, start_redis_agents
    from lab.patroni import PatroniCluster
    from lab.redis import RedisSentinelCluster
    if engine == "pg":
        cluster, start, backend, label = (PatroniCluster(work / "pg"), start_pg_agents, "pg_write",
                                          "PostgreSQL")
    else:
        cluster, start, backend, label = (RedisSentinelCluster(work / "redis"), start_redis_agents,
                                          "redis_write", "Redis")
    agents = []
    try:
        cluster.start()
        primary = cluster.wait_primary()
        agents = start(work / f"{engine}-agents", cluster, agent_bin, interval="1s")
        agent = next(a for a in agents if a.name == f"agent-{primary.name}")
        time.sleep(3)  # a few rounds before the window
        rows = [measure(label, agent.pid, agent.agent_port, agent.http_port, backend, seconds, detail=detail)]
        if engine == "pg":
            rows.append(libpq_floor(work, primary, seconds, detail))
        return rows
    finally:
        for a in agents:
            a.stop()
        cluster.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=("pg", "redis", "both"), default="both")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--detail", action="store_true", help="also the memory of each kind of mapping")
    ap.add_argument("--write", action="store_true",
                    help="also write the tables (with --detail's, top 25) to docs/results.md, section "
                         "agent-footprint")
    args = ap.parse_args()
    from lab.binaries import agent_bin
    work = Path(tempfile.mkdtemp(prefix="dbcheck-footprint.", dir="/tmp"))
    work.chmod(0o755)
    rows = [f for e in (("pg", "redis") if args.engine == "both" else (args.engine,))
            for f in run_lab(e, work, agent_bin(), args.seconds, args.detail)]
    shutil.rmtree(work, ignore_errors=True)  # kept (logs) when a run raised
    print("\n".join(table(rows)))
    for f in rows if args.detail else ():
        print("\n" + "\n".join(detail_table(f)))
    if args.write:
        from lab import results
        intro = ("One agent per node at `interval = 1s`, the primary's measured over "
                 f"{args.seconds:g} s while 10 pollers each ask its agent-check port and its HTTP "
                 "endpoint once a second. RSS counts every resident page, the libraries' shared "
                 "ones included; PSS divides those among the processes mapping them; private "
                 "dirty is the agent's alone. The floor row is a C program that links only libpq "
                 "and keeps one connection to the same node, asking it once a second "
                 "(bench/perf/floor/pg_resident.c): what no PostgreSQL agent on Debian's libpq (OpenSSL, "
                 "GnuTLS through LDAP, Kerberos) can go under.")
        body = ["## dbcheck-agent at rest: memory and CPU (the targets: RSS ≤ 10 MB, CPU ≤ 1 % of a core)",
                "", intro, "", *table(rows)]
        for f in rows if args.detail else ():
            body += ["", *detail_table(f, top=25)]
        results.write_section("agent-footprint", "\n".join(body))
        print(f"written to {results.RESULTS} (section agent-footprint)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
