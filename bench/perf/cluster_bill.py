#!/usr/bin/env python3
"""The cluster's bill: what M HAProxy processes x S servers x B backends
checking one real cluster cost the cluster itself, for dbcheck's external check, dbcheck-agent
and the check users compare them with.

PostgreSQL (3 Patroni members on etcd), backends pg_write and pg_read:
  external  haproxy-examples/postgres-patroni.cfg (dbcheck as external check, at its defaults:
            the checks of one HAProxy share the members' view for half
            the time between a server's own checks, "auto")
  unshared  the same with shared_view_max_age = "0s" (every check asks the members)
  agent     haproxy-examples/postgres-patroni-agent.cfg, one dbcheck-agent per member
  patroni   Patroni's own `option httpchk GET /primary` (pg_write) and `GET /replica` (pg_read)
            on each member's REST port, at the external example's inter 1s, fall 2 rise 3
            (writer) and fall 2 rise 2 (reader)
Redis (2 data nodes, 3 Sentinels), backends redis_write and redis_read:
  external  haproxy-examples/redis-sentinel.cfg
  agent     haproxy-examples/redis-sentinel-agent.cfg, one dbcheck-agent per data node
  seed-002  bench/failover/variants.py's seed-002 tcp-check (one Sentinel names the server,
            then ROLE master) for the writer; tcp-check AUTH + ROLE, expect `slave`, for the
            reader; the external example's inter/fall/rise

Each window: M HAProxies started (every one in a transient cgroup v2 directory of ours, so
their forked external checks are counted), waited on until every one routes as the cluster
says (writer: the primary only; reader: the replicas), then counters read before and after
`seconds`. Counters: /proc/<pid>/stat utime+stime of the Patroni daemons, etcd, agents,
Redis and Sentinel processes; PostgreSQL's postmaster with its children (reaped ones
included); cgroup cpu.stat usage_usec of the HAProxies and everything they forked;
pg_stat_database sessions and xact_commit + xact_rollback, pg_stat_statements calls of the
check role; SYNs to the Patroni REST ports (an nftables table of ours, counters only, removed
afterwards); Redis/Sentinel INFO stats. A row with M = 0 (nothing checking) is the idle floor.

  bench/perf/cluster_bill.py [--smoke] [--m 1,3,10,20] [--seconds 20] [--inter 1s]
      (after `. scripts/pythonpath`, as root)
bench/perf/main.py runs it as a section of the benchmarks in the lab it has started.
"""

import argparse
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import agent_load as load
from bench.failover import variants as anchors  # the failover proof's anchor configs, measured alike
from lab import redis as redis_fx, results
from lab.agent import render_agent_example, render_redis_agent_example, start_pg_agents, \
    start_redis_agents, stop_agents
from lab.binaries import agent_bin, dbcheck_bin
from lab.dbcheck import write_check_wrapper, write_dbcheck_config, write_redis_config
from lab.haproxy import HAProxy, render_example_for, render_redis_example_for
from lab.patroni import PatroniCluster
from lab.ports import free_ports
from lab.procs import wait_until
from lab.redis import RedisSentinelCluster

MODES = {
    "full": dict(ms=(1, 3, 10, 20), seconds=20, settle=3),
    "smoke": dict(ms=(1,), seconds=2, settle=0.5),
}
# Every variant's check interval is the examples' unless --inter says otherwise (all alike).
EXAMPLE_INTER = "1s"
_INTER = re.compile(r"(?<![-\w])inter 1s\b")
SETTLE_TIMEOUT = 40  # s for M HAProxies to route as the cluster says before a window
CGROUP_ROOT = Path("/sys/fs/cgroup/unified")  # cgroup v2 (hybrid hierarchy on this machine)
if not (CGROUP_ROOT / "cgroup.procs").exists():
    CGROUP_ROOT = Path("/sys/fs/cgroup")
_STATE_CHANGE = re.compile(r"Server \S+/\S+ is (UP|DOWN)\b")


# ------------------------------------------------------------------ counters
def _stat_fields(pid):
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def tree_cpu_seconds(pid):
    """CPU seconds of `pid`, its reaped children and its live children (with theirs): for a
    postmaster, every backend that ran, short-lived ones included. 0 when it is gone."""
    total = 0
    pids = [pid]
    try:
        pids += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return 0.0
    for p in pids:
        try:
            f = _stat_fields(p)
        except OSError:
            continue
        total += sum(int(x) for x in f[11:15])  # utime stime cutime cstime
    return total / load.CLK_TCK


def threads_cpu_seconds(pid):
    """CPU seconds the live threads of `pid` have run (/proc/<pid>/task/*/schedstat, ns: finer
    than the 10 ms ticks of /proc/<pid>/stat); 0 when it is gone."""
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(stat.read_text().split()[0])
        except (OSError, IndexError, ValueError):
            pass
    return total / 1e9


def cpu_sum(pids):
    """utime+stime seconds summed over `pids` (a PID that is gone counts 0)."""
    total = 0.0
    for pid in pids:
        try:
            total += load.cpu_seconds(pid)
        except OSError:
            pass
    return total


class Cgroup:
    """A transient cgroup v2 directory of ours: `place` is an argv prefix that moves the
    process into it before exec'ing the rest, so it and everything it forks are counted by
    usage() (cpu.stat usage_usec, in seconds). remove() waits for it to empty and removes it."""

    def __init__(self, name):
        self.path = CGROUP_ROOT / name
        self.path.mkdir()
        self.place = ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.path)]

    def usage(self):
        for line in (self.path / "cpu.stat").read_text().splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) / 1e6
        raise RuntimeError(f"{self.path}/cpu.stat has no usage_usec")

    def pids(self):
        return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]

    def remove(self, timeout=15):
        """Wait (bounded) until every process in it has exited, then rmdir. Stragglers after
        `timeout` (our own HAProxies' checks) are killed by their PIDs."""
        deadline = time.monotonic() + timeout
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in self.pids():
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        wait_until(lambda: not self.pids(), 10, f"{self.path} empty")
        self.path.rmdir()


class SynCounter:
    """Counts new TCP connections (SYN without ACK) to `ports` on the INPUT hook, in an
    nftables table of our own (counters only, policy accept: nothing is filtered), deleted
    by close()."""

    def __init__(self, ports):
        self.table = f"dbcheck_bill_{os.getpid()}"
        script = [f"add table inet {self.table}",
                  f"add chain inet {self.table} input "
                  "{ type filter hook input priority 0; policy accept; }"]
        script += [f"add rule inet {self.table} input tcp dport {p} tcp flags & (syn|ack) == syn counter"
                   for p in ports]
        subprocess.run(["nft", "-f", "-"], input="\n".join(script) + "\n", text=True, check=True,
                       capture_output=True)

    def count(self):
        out = subprocess.run(["nft", "-j", "list", "table", "inet", self.table], check=True,
                             capture_output=True, text=True).stdout
        return sum(e["counter"]["packets"] for item in json.loads(out)["nftables"]
                   for e in item.get("rule", {}).get("expr", []) if "counter" in e)

    def close(self):
        subprocess.run(["nft", "delete", "table", "inet", self.table], capture_output=True)


# ------------------------------------------------------------------ variants
@dataclass
class Variant:
    """One way of checking: name, cfg(cluster, workdir, agents, wrapper) -> HAProxy config text,
    expect(cluster) -> {backend: sorted server names that should be UP}, whether it needs
    one agent per node."""

    name: str
    cfg: object
    expect: object
    agents: bool = False


@dataclass
class Row:
    engine: str
    variant: str
    m: int
    servers: int  # M x S x B
    figures: dict = field(default_factory=dict)  # column -> per second / % of a core
    flaps: int = 0


def _reader_backend(backend, check_lines, servers):
    """A reader frontend+backend beside an anchor's writer: roundrobin, the external example's
    reader settings (inter 1s fall 2 rise 2)."""
    port = free_ports(1)[0]
    return (f"\nfrontend {backend}\n    bind 127.0.0.1:{port}\n    default_backend {backend}\n\n"
            f"backend {backend}\n    balance roundrobin\n{check_lines}"
            "    default-server inter 1s fall 2 rise 2\n" + "".join(f"    server {s}\n" for s in servers))


def _anchor_cfg(variant):
    """The config of a failover anchor, whose stats socket is <workdir>/<key>/admin.sock:
    that directory is created (0755, HAProxy drops root)."""
    sock = re.search(r"^\s*stats socket (\S+)", variant.cfg, re.M).group(1)
    Path(sock).parent.mkdir(mode=0o755, exist_ok=True)
    return variant.cfg


def pg_patroni_cfg(cluster, workdir):
    return _anchor_cfg(anchors.pg_patroni_httpchk(cluster, workdir)) + _reader_backend(
        "pg_read", "    option httpchk GET /replica\n    http-check expect status 200\n",
        [f"{m.name} {m.pg_addr} check port {m.rest_port}" for m in cluster.members()])


def redis_seed_cfg(cluster, workdir):
    auth = (f'    tcp-check send "AUTH {redis_fx.HC_USER} {redis_fx.HC_PASSWORD}\\r\\n"\n'
            "    tcp-check expect string +OK\n")
    check = ("    option tcp-check\n    tcp-check connect\n" + auth
             + '    tcp-check send "ROLE\\r\\n"\n    tcp-check expect string slave\n')
    return _anchor_cfg(anchors.redis_seed_002(cluster, workdir)) + _reader_backend(
        "redis_read", check, [f"{n.port} {n.addr} check" for n in cluster.nodes()])


def _example(render, via):
    """cfg() of an example config: render(cluster, via, <workdir>/admin.sock)'s text, where via
    is "wrapper" (the external check's program) or "agents"."""
    return lambda c, d, agents, wrapper: render(c, wrapper if via == "wrapper" else agents,
                                                d / "admin.sock")[0]


def pg_expect(cluster):
    leader = cluster.wait_primary()
    return {"pg_write": [leader.name], "pg_read": sorted(m.name for m in cluster.members() if m != leader)}


def redis_expect(cluster, by_port=False):
    master = cluster.master()
    name = (lambda n: str(n.port)) if by_port else (lambda n: n.name)
    return {"redis_write": [name(master)],
            "redis_read": sorted(name(n) for n in cluster.nodes() if n != master)}


class Bill:
    """Runs the windows of one engine's lab and keeps their rows; a failure is recorded and
    ends that engine's part (the caller decides)."""

    def __init__(self, mode, work, dbcheck=None, agent=None, ms=None, seconds=None, built_from=None,
                 inter=EXAMPLE_INTER):
        self.mode, self.work, self.inter = mode, Path(work), inter
        self.ms = tuple(ms or MODES[mode]["ms"])
        self.seconds = seconds or MODES[mode]["seconds"]
        self.settle = MODES[mode]["settle"]
        self.dbcheck, self.agent = dbcheck or dbcheck_bin(), agent or agent_bin()
        self.built_from = built_from  # what the binaries were built from, when the caller knows
        self.rows = []
        self._n = 0

    # -------------------------------------------------------------- one window
    def window(self, engine, variant, m, cluster, sample, wrapper):
        """M HAProxies of `variant` (with one agent per node if it needs them), settled, then
        one measured window; appends a Row."""
        self._n += 1
        tag = f"{engine}-{variant.name}-{m}-{self._n}"
        agents, haproxies, cg = [], [], None
        try:
            if variant.agents:
                start = start_pg_agents if engine == "PostgreSQL" else start_redis_agents
                agents = start(self.work / f"{tag}-agents", cluster, self.agent, interval="1s")
            if m:
                cg = Cgroup(f"dbcheck-bill-{os.getpid()}-{self._n}")
                for i in range(m):
                    d = self.work / f"{tag}-haproxy{i}"
                    d.mkdir(mode=0o755)
                    cfg = _INTER.sub(f"inter {self.inter}",
                                     variant.cfg(cluster, d, agents=agents, wrapper=wrapper))
                    haproxies.append(HAProxy(d, cfg, place=cg.place).start())
                want = variant.expect(cluster)
                wait_until(lambda: all(sorted(h.servers_up(b)) == s
                                       for h in haproxies for b, s in want.items()),
                           SETTLE_TIMEOUT, f"{tag}: every HAProxy routes as the cluster says {want}")
                time.sleep(self.settle)  # past the settling checks (and the agents' first rounds)
            offsets = [h.log_path.stat().st_size for h in haproxies]
            s0 = sample(haproxies, agents, cg)
            time.sleep(self.seconds)
            s1 = sample(haproxies, agents, cg)
            dt = s1.pop("t") - s0.pop("t")
            row = Row(engine, variant.name, m, m * len(want_servers(cluster)) * 2)
            for k in s1:
                row.figures[k] = (s1[k] - s0[k]) / dt * (100 if k.endswith("cpu") else 1)
            row.flaps = sum(len(_STATE_CHANGE.findall(h.log_path.read_bytes()[o:].decode(errors="replace")))
                            for h, o in zip(haproxies, offsets))
            self.rows.append(row)
            print(f"  {engine:<10} {variant.name:<9} M={m:<3} " + " ".join(
                f"{k} {v:.1f}" for k, v in row.figures.items()) + f" flaps {row.flaps}", flush=True)
        finally:
            for h in haproxies:
                h.stop()
            if cg:
                cg.remove()
            if agents:
                stop_agents(agents)

    def run(self, engine, cluster):
        """Every window of `engine` ("PostgreSQL" or "Redis", bench/perf/main.py's lab names) on
        the started `cluster`."""
        (self.postgres if engine == "PostgreSQL" else self.redis)(cluster)

    def run_lab(self, engine, cluster, variants, sample, wrapper):
        """The idle floor, then for each M every variant (so drift hits them alike)."""
        self.window(engine, Variant("idle", None, None), 0, cluster, sample, wrapper)
        for m in self.ms:
            for v in variants:
                self.window(engine, v, m, cluster, sample, wrapper)

    # -------------------------------------------------------------- PostgreSQL
    def postgres(self, cluster):
        config = write_dbcheck_config(self.work / "bill-pg-dbcheck", cluster)  # owner haproxy
        wrapper = write_check_wrapper(self.work / "bill-pg-dbcheck" / "dbcheck-wrapper", self.dbcheck, config)
        unshared = _example(render_example_for, "wrapper")  # the lab's config: "0s", not shared

        def external(c, d, agents, wrapper):
            """The external example at dbcheck's defaults (views shared, "auto"), each HAProxy
            sharing in a directory of its own: M HAProxies stand for M hosts, which share
            nothing (one directory for all would divide the members' load by M)."""
            views = d / "shared-views"
            views.mkdir(mode=0o700)
            os.chown(views, pwd.getpwnam("haproxy").pw_uid, pwd.getpwnam("haproxy").pw_gid)
            cfg = write_dbcheck_config(d / "dbcheck", c, share=True,
                                       cluster_extra=f'shared_view_dir = "{views}"')
            return unshared(c, d, agents, write_check_wrapper(d / "dbcheck" / "wrapper", self.dbcheck, cfg))

        variants = [
            Variant("external", external, pg_expect),
            Variant("unshared", unshared, pg_expect),
            Variant("agent", _example(render_agent_example, "agents"), pg_expect, agents=True),
            Variant("patroni", lambda c, d, agents, wrapper: pg_patroni_cfg(c, d), pg_expect),
        ]
        syn = SynCounter([m.rest_port for m in cluster.members()])
        try:
            self.run_lab("PostgreSQL", cluster, variants, lambda h, a, cg: pg_sample(cluster, syn, h, a, cg),
                         wrapper)
        finally:
            syn.close()

    # -------------------------------------------------------------- Redis
    def redis(self, cluster):
        config = write_redis_config(self.work / "bill-redis-dbcheck", cluster)
        wrapper = write_check_wrapper(self.work / "bill-redis-dbcheck" / "dbcheck-wrapper", self.dbcheck,
                                      config)
        variants = [
            Variant("external", _example(render_redis_example_for, "wrapper"), redis_expect),
            Variant("agent", _example(render_redis_agent_example, "agents"), redis_expect, agents=True),
            Variant("seed-002", lambda c, d, agents, wrapper: redis_seed_cfg(c, d),
                    lambda c: redis_expect(c, by_port=True)),
        ]
        self.run_lab("Redis", cluster, variants, lambda h, a, cg: redis_sample(cluster, h, a, cg), wrapper)

    # -------------------------------------------------------------- report
    def markdown(self, command):
        out = [
            f"Command: `{command}` ({self.seconds} s per window, M in {{{', '.join(map(str, self.ms))}}}). "
            "Measured on a **shared 2-core machine** (other engineers' builds, tests and benchmarks ran "
            "beside it; the HAProxies, checks, agents and the whole cluster share the same 2 cores): "
            "figures move by tens of percent between runs, and the M = 0 row is the floor to subtract. "
            f"Binaries: `{self.dbcheck}` and `{self.agent}`"
            + (f", built from {self.built_from}." if self.built_from else "."),
            "",
            "Each row: M HAProxy processes, each with a writer and a reader backend over every node "
            f"(S = 3 Patroni members or 2 Redis data nodes, B = 2), inter {self.inter} in every "
            "variant, settled (every HAProxy "
            "routes as the cluster says), then counters read around the window. **external**: the "
            "example config with dbcheck as external check at its defaults (PostgreSQL: views shared "
            "between the checks of one HAProxy for half the time between a server's own checks (\"auto\"), "
            "each HAProxy in a directory of its own, "
            "as M hosts would; run through a `/bin/sh` wrapper that adds "
            "`--config`, as in the tests: one extra exec per check, counted in HAProxy CPU); "
            "**unshared** (PostgreSQL): the same with `shared_view_max_age = \"0s\"`, every check "
            "asking the members itself; "
            "**agent**: the agent example (agent-check every 250/500 ms and httpchk on the agent, "
            "downinter 250 ms), one dbcheck-agent per node, `interval = 1s`; **patroni**: "
            "`option httpchk GET /primary` (writer) and `GET /replica` (reader) on each member's REST "
            "port, fall 2 rise 3 / fall 2 rise 2; **seed-002** "
            "(Redis): bench/failover/variants.py's one-Sentinel-then-ROLE tcp-check for the writer, "
            "AUTH + ROLE expect `slave` for the reader, same settings. CPU in % of one core from "
            "/proc/<pid>/stat utime+stime; HAProxy: cgroup v2 `usage_usec` of the M processes and "
            "every check they forked (\"of which checks\": that minus the run time of the HAProxy "
            "processes' own threads, /proc/<pid>/task/*/schedstat). "
            "PostgreSQL CPU: the postmasters with all their backends (reaped ones included). Flaps: "
            "server state changes HAProxy logged during the window (0 = it routed steadily).",
        ]
        pg = [r for r in self.rows if r.engine == "PostgreSQL"]
        redis = [r for r in self.rows if r.engine == "Redis"]
        if pg:
            out += self._pg_markdown(pg)
        if redis:
            out += self._redis_markdown(redis)
        return "\n".join(out) + "\n"

    @staticmethod
    def _pg_markdown(rows):
        out = [
            "",
            "#### PostgreSQL + Patroni (3 members, etcd)",
            "",
            "REST conn/s: new TCP connections (SYN) to the 3 Patroni REST ports, counted by an nftables "
            "rule (Patroni 3.0.2 answers HTTP/1.0 and closes: one connection per request). PG sessions/s "
            "and xacts/s: `pg_stat_database` `sessions` and `xact_commit + xact_rollback`, all databases "
            "of the 3 members (includes Patroni's own queries and the bench's 3 reads per sample; "
            "backends report at most once a second). Check stmts/s: `pg_stat_statements` calls of the "
            "check role `healthcheck`.",
            "",
            "| variant | M | servers | Patroni CPU % | REST conn/s | etcd CPU % | PG sessions/s | "
            "PG xacts/s | check stmts/s | PG CPU % | HAProxy CPU % | of which checks % | agents CPU % "
            "| flaps |",
            "| --- |" + " ---: |" * 13,
        ]
        for r in rows:
            f = r.figures
            out.append(f"| {r.variant} | {r.m} | {r.servers} | {f['patroni_cpu']:.1f} | "
                       f"{f['rest_conn']:.1f} | {f['etcd_cpu']:.1f} | {f['pg_sessions']:.1f} | "
                       f"{f['pg_xacts']:.1f} | "
                       f"{f['check_stmts']:.1f} | {f['pg_cpu']:.1f} | {_haproxy(f)} | {f['agents_cpu']:.1f} "
                       f"| {r.flaps} |")
        return out + _target_lines(rows, "patroni", {
            "REST conn/s": "rest_conn", "Patroni CPU %": "patroni_cpu", "etcd CPU %": "etcd_cpu",
            "PG sessions/s": "pg_sessions"})

    @staticmethod
    def _redis_markdown(rows):
        out = [
            "",
            "#### Redis + Sentinel (2 data nodes, 3 Sentinels)",
            "",
            "Commands/s and connections/s: INFO stats `total_commands_processed` and "
            "`total_connections_received`, summed over the 2 data nodes and over the 3 Sentinels "
            "(includes replication, the Sentinels' own traffic and the bench's one INFO per instance "
            "per sample).",
            "",
            "| variant | M | servers | data cmds/s | data conn/s | Sentinel cmds/s | Sentinel conn/s | "
            "Redis CPU % | Sentinel CPU % | HAProxy CPU % | of which checks % | agents CPU % | flaps |",
            "| --- |" + " ---: |" * 12,
        ]
        for r in rows:
            f = r.figures
            out.append(f"| {r.variant} | {r.m} | {r.servers} | {f['data_cmds']:.1f} | {f['data_conn']:.1f} | "
                       f"{f['sentinel_cmds']:.1f} | {f['sentinel_conn']:.1f} | {f['redis_cpu']:.1f} | "
                       f"{f['sentinel_cpu']:.1f} | {_haproxy(f)} | {f['agents_cpu']:.1f} | {r.flaps} |")
        return out + _target_lines(rows, "seed-002", {"Sentinel cmds/s": "sentinel_cmds",
                                                      "Sentinel conn/s": "sentinel_conn",
                                                      "data conn/s": "data_conn"})


def _target_lines(rows, reference, columns):
    """The issue's targets in words, from `rows`, each figure above the idle (M = 0) row: the
    external check's load beside `reference`'s at each M, and the agent's at each M (flat?)."""
    idle = next((r.figures for r in rows if r.m == 0), None)
    if idle is None:
        return []
    by = {(r.variant, r.m): r.figures for r in rows}
    ms = sorted({r.m for r in rows if r.m})
    out = ["", "Above the idle row (M = 0), external check (at its defaults; \"unshared\": not sharing "
               "the members' view) "
               f"beside {reference} at each M "
               "(target: external <= reference), and the agent across M (target: flat):", ""]
    for label, key in columns.items():
        pairs = []
        for m in ms:
            for variant in ("external", "unshared"):
                ext, ref = by.get((variant, m)), by.get((reference, m))
                if ext and ref:
                    e, r = ext[key] - idle[key], ref[key] - idle[key]
                    ratio = f" = {e / r:.2f}×" if r > 0.05 else ""
                    pairs.append(f"M={m} {variant}: {_f(e)} vs {_f(r)}{ratio}")
        agent = [_f(by[("agent", m)][key] - idle[key]) for m in ms if ("agent", m) in by]
        out.append(f"- {label}: " + "; ".join(pairs) + f". Agent at M = {', '.join(map(str, ms))}: "
                   + ", ".join(agent) + ".")
    return out


def _f(x):
    """x with one decimal, a rounded-away negative sign dropped ("-0.0" -> "0.0")."""
    text = f"{x:.1f}"
    return "0.0" if text == "-0.0" else text


def want_servers(cluster):
    return cluster.members() if isinstance(cluster, PatroniCluster) else cluster.nodes()


def _haproxy(f):
    if "haproxy_cpu" not in f:
        return "— | —"
    # The two counters are read a few ms apart: a difference below their jitter shows as 0.
    return f"{f['haproxy_cpu']:.1f} | {max(0.0, f['haproxy_cpu'] - f['haproxy_self_cpu']):.1f}"


def _common_sample(haproxies, agents, cg):
    s = {"agents_cpu": cpu_sum(a.pid for a in agents)}
    if cg:
        s["haproxy_cpu"] = cg.usage()
        s["haproxy_self_cpu"] = sum(threads_cpu_seconds(h.pid) for h in haproxies)
    return s


def pg_sample(cluster, syn, haproxies, agents, cg):
    t = time.monotonic()
    s = {"patroni_cpu": cpu_sum(d.pid for d in cluster.patroni.values()),
         "etcd_cpu": cpu_sum([cluster.etcd.pid]),
         "pg_cpu": sum(tree_cpu_seconds(p) for p in map(cluster.postmaster_pid, cluster.members()) if p),
         "rest_conn": syn.count(), **_common_sample(haproxies, agents, cg)}
    sessions = xacts = 0
    for m in cluster.members():
        with cluster.superuser_conn(m) as conn, conn.cursor() as cur:
            cur.execute("SELECT coalesce(sum(sessions), 0), coalesce(sum(xact_commit + xact_rollback), 0) "
                        "FROM pg_stat_database")
            a, b = cur.fetchone()
            sessions, xacts = sessions + int(a), xacts + int(b)
    s.update(pg_sessions=sessions, pg_xacts=xacts, check_stmts=load.pg_check_statements(cluster), t=t)
    return s


def _info_stats(text):
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return int(fields["total_commands_processed"]), int(fields["total_connections_received"])


def redis_sample(cluster, haproxies, agents, cg):
    t = time.monotonic()
    s = {"redis_cpu": cpu_sum(cluster.pid(n) for n in cluster.nodes()),
         "sentinel_cpu": cpu_sum(cluster.pid(x) for x in cluster.sentinels()),
         **_common_sample(haproxies, agents, cg)}
    data = [_info_stats(cluster.admin(n, "INFO", "stats")) for n in cluster.nodes()]
    sent = [_info_stats(cluster.sentinel_admin(x, "INFO", "stats")) for x in cluster.sentinels()]
    s.update(data_cmds=sum(c for c, _ in data), data_conn=sum(n for _, n in data),
             sentinel_cmds=sum(c for c, _ in sent), sentinel_conn=sum(n for _, n in sent), t=t)
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="M = 1 and 2 s windows (CI keeps it working)")
    ap.add_argument("--m", help="comma-separated HAProxy counts (default: 1,3,10,20; smoke: 1)")
    ap.add_argument("--inter", default=EXAMPLE_INTER,
                    help="every variant's HAProxy inter instead of the examples' 1s (all alike)")
    ap.add_argument("--seconds", type=int, help="seconds per window (default 20; smoke 2)")
    ap.add_argument("--engine", choices=("postgres", "redis", "both"), default="both")
    ap.add_argument("--section", default="cluster-bill", help="docs/results.md section to write")
    ap.add_argument("--built-from", help="what $DBCHECK_BIN and $DBCHECK_AGENT_BIN were built from "
                    "(e.g. a commit), for the report")
    args = ap.parse_args()
    mode = "smoke" if args.smoke else "full"
    work = Path(tempfile.mkdtemp(prefix="dbcheck-bill.", dir="/tmp"))
    work.chmod(0o755)
    bill = Bill(mode, work, ms=[int(x) for x in args.m.split(",")] if args.m else None, seconds=args.seconds,
                built_from=args.built_from, inter=args.inter)
    failed = False
    labs = [("postgres", PatroniCluster(work / "pg"), bill.postgres),
            ("redis", RedisSentinelCluster(work / "redis"), bill.redis)]
    for name, cluster, fn in labs:
        if args.engine not in (name, "both"):
            continue
        try:
            cluster.start()
            fn(cluster)
        except Exception:  # noqa: BLE001 - reported, and the run exits 1
            traceback.print_exc()
            failed = True
        finally:
            cluster.stop()
    text = bill.markdown(" ".join(["bench/perf/cluster_bill.py", *sys.argv[1:]]))
    print("\n" + text)
    if failed:
        print(f"FAILED; docs/results.md not written; logs kept in {work}")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    results.write_section(args.section, text)
    print(f"written to {results.RESULTS} (section {args.section})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
