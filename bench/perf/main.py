"""dbcheck benchmarks, side by side in one run on a real local lab (run via bench/perf/run):

1. External check cost: dbcheck doing one writer check, its I/O floor (bench/perf/floor/) and the
   hand-rolled script (bench/perf/scripts/), interleaved, for PostgreSQL/Patroni and Redis/Sentinel.
2. dbcheck-agent under polling: answers/s and latency at 1, 100 and 1,000 concurrent pollers on
   the agent-check port and the HTTP endpoint, beside Patroni's own GET /primary; the check
   statements/commands the databases see; the agent's CPU and RSS.
3. dbcheck-agent under open-loop polling (bench/perf/openloop.py): 100, 1,000 and 10,000 pollers at
   1 Hz each on their own schedule, as HAProxy's checks, latency from the scheduled send time.

The cluster's bill (bench/perf/cluster_bill.py) runs in each lab before its agents start: what M
HAProxies checking it cost Patroni, etcd, PostgreSQL, Redis and Sentinel (section "cluster-bill").

Prints the tables and writes them into docs/results.md (section "bench"). Exits 1 if anything
failed: a check that did not pass the writer, a wrong or missing answer, wrk failing.

  bench/perf/run [--smoke]      # smoke: few invocations, 2 s windows (CI keeps it working)
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

# The repository root (the lab package) is on PYTHONPATH: bench/perf/run sources scripts/pythonpath;
# the modules beside this one are on sys.path as this script's own directory.
import agent_footprint as footprint
import agent_load as load
import cluster_bill
import external_cost as ext
import openloop
from lab import redis as redis_fx, results
from lab.agent import start_pg_agents, start_redis_agents
from lab.binaries import agent_bin, dbcheck_bin
from lab.dbcheck import write_dbcheck_config, write_redis_config
from lab.patroni import HC_PASSWORD, HC_USER, PatroniCluster
from lab.redis import RedisSentinelCluster

HERE = Path(__file__).resolve().parent  # bench/perf: the C programs' sources are relative to it
REPO = HERE.parents[1]
DBCHECK = dbcheck_bin()
AGENT = agent_bin()
BUILD_BENCH = Path(os.environ.get("DBCHECK_BENCH_BUILD") or REPO / "build-bench")
# The C programs of bench/ (not part of the CMake build): name -> (source, pkg-config packages).
TOOLS = {
    **ext.FLOORS,
    "agent_poll": ("load/agent_poll.c", []),
    "pg_resident": ("floor/pg_resident.c", ["libpq"]),
    "openloop": ("load/openloop.c", []),
}
# The agent's per-address caps: beyond them, pollers that all come from 127.0.0.1 are
# refused by design, so errors there are counted, not failures.
HTTP_PER_IP_LIMIT = 1024  # agent/http_server.cpp: k_per_address (MHD_OPTION_PER_IP_CONNECTION_LIMIT)
AGENT_PER_IP_LIMIT = 1024  # agent/agent_server.cpp: k_per_address
MODES = {
    # invocations per variant, seconds per polling window, poller counts
    "full": dict(rounds=50, seconds=10, pollers=(1, 100, 1000), redis_pollers=(1, 100),
                 open_seconds=10, open_pollers=(100, 1000, 10000), open_redis_pollers=(100, 1000)),
    "smoke": dict(rounds=5, seconds=2, pollers=(1, 100), redis_pollers=(1, 100),
                  open_seconds=3, open_pollers=(100,), open_redis_pollers=(100,)),
}

# Seconds of the footprint window (bench/perf/agent_footprint.py: 10 pollers at 1 Hz on both ports).
FOOTPRINT_SECONDS = {"full": 60, "smoke": 10}
FOOTPRINT_BACKEND = {"PostgreSQL": "pg_write", "Redis": "redis_write"}


class Bench:
    """Runs the parts, keeps their tables and every failure (a failure ends a part, not the run)."""

    def __init__(self, mode, work):
        self.mode, self.work = mode, work
        self.cfg = MODES[mode]
        self.failures = []
        self.ext_rows = {}  # engine -> ext.summarize() result
        self.poll_rows = []  # (pollers, target, Load, stmts/s | None, cpu % | None, rss MiB | None)
        self.redis_rows = []  # (pollers, Load, commands/s, cpu %, rss MiB)
        self.open_rows = {}  # "PostgreSQL" / "Redis" -> [openloop.Row]
        self.tools = {}
        self.dbcheck = DBCHECK  # the external check's binary: shipped_dbcheck() in main()
        self.footprints = []  # agent_footprint.Footprint per engine
        self.bill = cluster_bill.Bill(mode, work)  # the cluster's bill

    def fail(self, what):
        print(f"FAILED: {what}", flush=True)
        self.failures.append(what)

    def part(self, name, fn, *args):
        """fn(*args); an exception is recorded as a failure of part `name`."""
        t0 = time.monotonic()
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - reported, and the run exits 1
            traceback.print_exc()
            self.fail(f"{name}: {e}")
        print(f"== {name}: {time.monotonic() - t0:.0f}s", flush=True)

    # ------------------------------------------------------------------ PostgreSQL
    def lab(self, name, cluster, start_agents, external, polling, open_loop):
        """Start `cluster` (a lab of lab/protocol.py), then run external(cluster, writer) on the
        primary its manager names and, with one agent per node started by
        start_agents(workdir, cluster, agent_bin, ...), polling(cluster, writer, the writer's
        agent) then open_loop(cluster, writer, agent); everything is stopped (by PID) at the end."""
        agents = []
        try:
            cluster.start()
            writer = cluster.wait_primary()
            self.part(f"external check, {name}", external, cluster, writer)
            self.part(f"cluster bill, {name}", self.bill.run, name, cluster)  # before any agent runs
            agents = start_agents(self.work / f"{name}-agents", cluster, AGENT, interval="1s")
            agent = next(a for a in agents if a.name == f"agent-{writer.name}")
            self.part(f"agent footprint, {name}", self.footprint, name, agent)  # before the load
            self.part(f"agent polling, {name}", polling, cluster, writer, agent)
            self.part(f"agent open-loop polling, {name}", open_loop, cluster, writer, agent)
        finally:
            for a in agents:
                a.stop()
            cluster.stop()

    def postgres(self):
        self.lab("PostgreSQL", PatroniCluster(self.work / "pg"), start_pg_agents,
                 self.pg_external, self.pg_polling, self.pg_open_loop)

    def pg_external(self, cluster, leader):
        config = write_dbcheck_config(self.work / "pg-dbcheck", cluster, owner=None)
        pgpass = config.parent / "pgpass"
        pgpass.write_text(f"127.0.0.1:*:*:{HC_USER}:{HC_PASSWORD}\n")
        pgpass.chmod(0o600)
        variants = ext.pg_variants(self.dbcheck, config, self.tools, pgpass, leader)
        self.ext_rows["PostgreSQL"] = ext.summarize(ext.measure(variants, self.cfg["rounds"]))

    def pg_polling(self, cluster, leader, agent):
        agent_url = f"http://127.0.0.1:{agent.http_port}/backend/pg_write"
        patroni_url = f"{leader.rest_url}/primary"
        s = self.cfg["seconds"]
        for n in self.cfg["pollers"]:
            targets = [
                ("agent-check port",
                 lambda: load.poll_agent_port(self.tools["agent_poll"], agent.agent_port, "pg_write", n, s)),
                ("agent HTTP, keep-alive", lambda: load.wrk(agent_url, n, s)),
                ("agent HTTP, Connection: close", lambda: load.wrk(agent_url, n, s, close=True)),
                ("Patroni /primary, keep-alive", lambda: load.wrk(patroni_url, n, s)),
                ("Patroni /primary, Connection: close", lambda: load.wrk(patroni_url, n, s, close=True)),
            ]
            for name, run in targets:
                is_agent = name.startswith("agent")
                c0, cpu0, t0 = (load.pg_check_statements(cluster), load.cpu_seconds(agent.pid),
                                time.monotonic())
                result = run()
                c1, cpu1, t1 = (load.pg_check_statements(cluster), load.cpu_seconds(agent.pid),
                                time.monotonic())
                extra = ((c1 - c0) / (t1 - t0), 100 * (cpu1 - cpu0) / (t1 - t0), load.rss_mib(agent.pid)) \
                    if is_agent else (None, None, None)
                self.poll_rows.append((n, name, result, *extra))
                self.judge(f"{name} at {n} pollers", result, n, is_agent)
                print(f"  {n:>5} {name:<38} {result.rate:>8.0f}/s p50 {result.p50_ms:.2f} ms "
                      f"p99 {result.p99_ms:.2f} ms errors {result.errors or 0}", flush=True)

    def pg_open_loop(self, cluster, leader, agent):
        self._open_loop("PostgreSQL", agent, "pg_write", self.cfg["open_pollers"], openloop.MODES,
                        lambda: load.pg_check_statements(cluster))

    def redis_open_loop(self, cluster, master, agent):
        self._open_loop("Redis", agent, "redis_write", self.cfg["open_redis_pollers"], openloop.MODES[:1],
                        lambda: load.redis_commands(cluster, master))

    def _open_loop(self, engine, agent, backend, pollers, modes, db_count):
        rows = openloop.measure(self.tools["openloop"], agent, backend, pollers, self.cfg["open_seconds"],
                                db_count, modes)
        self.open_rows[engine] = rows
        for row in rows:
            for problem in openloop.problems(row):
                self.fail(f"open loop, {engine}, {row.label} at {row.pollers} pollers: {problem}")

    def judge(self, what, result, pollers, is_agent):
        """Record a failure for a missing or wrong answer. Patroni ends every answer by closing
        (wrk counts a read error each time); the agent's HTTP port refuses a client's
        connections beyond its per-IP limit: both are results, not failures."""
        if result.answers == 0:
            self.fail(f"{what}: no answer")
        if result.unexpected or result.errors.get("status"):
            self.fail(f"{what}: unexpected answers {result.errors} {result.unexpected}")
        elif is_agent and pollers <= (HTTP_PER_IP_LIMIT if "HTTP" in what else AGENT_PER_IP_LIMIT) \
                and result.error_count():
            self.fail(f"{what}: errors {result.errors}")

    # ------------------------------------------------------------------ Redis
    def redis(self):
        self.lab("Redis", RedisSentinelCluster(self.work / "redis"), start_redis_agents, self.redis_external,
                 self.redis_polling, self.redis_open_loop)

    def redis_external(self, cluster, master):
        config = write_redis_config(self.work / "redis-dbcheck", cluster, owner=None)
        variants = ext.redis_variants(self.dbcheck, config, self.tools, cluster, master,
                                      redis_fx.HC_USER, redis_fx.HC_PASSWORD, redis_fx.MASTER_NAME)
        self.ext_rows["Redis"] = ext.summarize(ext.measure(variants, self.cfg["rounds"]))

    def redis_polling(self, cluster, master, agent):
        for n in self.cfg["redis_pollers"]:
            c0, cpu0, t0 = load.redis_commands(cluster, master), load.cpu_seconds(agent.pid), time.monotonic()
            result = load.poll_agent_port(self.tools["agent_poll"], agent.agent_port, "redis_write", n,
                                          self.cfg["seconds"])
            c1, cpu1, t1 = load.redis_commands(cluster, master), load.cpu_seconds(agent.pid), time.monotonic()
            self.redis_rows.append((n, result, (c1 - c0) / (t1 - t0), 100 * (cpu1 - cpu0) / (t1 - t0),
                                    load.rss_mib(agent.pid)))
            self.judge(f"Redis agent-check port at {n} pollers", result, n, True)

    # ------------------------------------------------------------------ footprint
    def footprint(self, engine, agent):
        """The writer's agent at rest: memory and CPU with 10 pollers at 1 Hz on both ports."""
        f = footprint.measure(engine, agent.pid, agent.agent_port, agent.http_port, FOOTPRINT_BACKEND[engine],
                              FOOTPRINT_SECONDS[self.mode], detail=True)
        self.footprints.append(f)
        print("\n".join(footprint.table([f])), flush=True)
        if f.errors or not f.answers:
            self.fail(f"agent footprint, {engine}: {f.answers} answers, {f.errors} errors")

    def _footprint_markdown(self):
        if not self.footprints:
            return []
        out = ["", "### dbcheck-agent at rest (the targets: RSS ≤ 10 MB, CPU ≤ 1 % of a core)", "",
               f"The writer's agent (`interval = 1s`) right after it started, before the load above, for "
               f"{FOOTPRINT_SECONDS[self.mode]} s while 10 pollers each ask its agent-check port and GET "
               "its `/backend/<writer>` once a second (`bench/perf/agent_footprint.py`; standalone: "
               "`python3 bench/perf/agent_footprint.py --detail`). Memory at the window's end from "
               "`/proc/PID/smaps_rollup` (PSS shares each library page among the processes mapping it; "
               "private dirty is what this process alone holds), CPU = user + system over the window.",
               ""]
        out += footprint.table(self.footprints)
        for f in self.footprints:
            out += ["", *footprint.detail_table(f, top=12)]
        return out

    # ------------------------------------------------------------------ report
    def markdown(self, command, elapsed):
        c = self.cfg
        out = [
            f"Command: `{command}` ({self.mode} mode: {c['rounds']} invocations per variant, "
            f"{c['seconds']} s per polling window; took {elapsed:.0f} s including lab start and stop). "
            "Measured on a **shared 2-core machine** (other engineers' builds and tests ran at the same "
            "time): absolute times move from run to run; the ratios, measured side by side and interleaved, "
            "are the figures to quote.",
            "",
            "### External check: one writer check per process",
            "",
            "Each variant ran round-robin (one untimed warm-up round first) against the same live lab, as "
            "HAProxy would start it: a fresh process with a clean environment. Wall = fork to reaped exit; "
            "CPU = user+sys of the process and the children it waited for (`os.wait4`).",
            "",
            "- **dbcheck**: `dbcheck --config FILE NOT_USED NOT_USED HOST PORT` with `HAPROXY_PROXY_NAME`, "
            "as `external-check command` runs it (config and password file read, both opinions asked in "
            "parallel: Patroni `GET /cluster` from a majority of the members, or the three Sentinels; the "
            "full writer query; verdict). The binary as the package ships it: stripped "
            "(`cmake --install build --strip`), libpq and libcurl in its modules, loaded on first use.",
            "- **floor** (`bench/perf/floor/*.c`, `cc -O2`): the same I/O and nothing else. "
            "PostgreSQL: one libpq "
            "connect+auth+`SELECT pg_is_in_recovery()` and, in parallel, one libcurl `GET /cluster`. Redis: "
            "hiredis AUTH+ROLE on the node and AUTH+`SENTINEL GET-MASTER-ADDR-BY-NAME` on each of three "
            "Sentinels, in parallel.",
            "- **script** (`bench/perf/scripts/*.sh`): what an operator writes: `psql -tAc 'select "
            "pg_is_in_recovery()'` then `curl` Patroni `/primary`; `redis-cli ROLE` then `redis-cli` to each "
            "Sentinel, one after another.",
            "",
            "| engine | variant | wall p50 ms | wall p90 ms | CPU p50 ms | CPU p90 ms |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for engine, rows in self.ext_rows.items():
            for name, (w50, w90, c50, c90) in rows.items():
                out.append(f"| {engine} | {name} | {w50:.2f} | {w90:.2f} | {c50:.2f} | {c90:.2f} |")
        out += ["", "Ratios of the medians:", "",
                "| engine | dbcheck / floor, wall | dbcheck / floor, CPU | script / dbcheck, wall | "
                "script / dbcheck, CPU |", "| --- | ---: | ---: | ---: | ---: |"]
        for engine, rows in self.ext_rows.items():
            d, f, s = rows["dbcheck"], rows["floor"], rows["script"]
            out.append(f"| {engine} | {d[0] / f[0]:.2f}× | {d[2] / f[2]:.2f}× | {s[0] / d[0]:.2f}× | "
                       f"{s[2] / d[2]:.2f}× |")
        out += ["", "The external check's cost against the issue-15 targets (CPU p50, same interleaved run; "
                "**floor, libpq + own GET** is `bench/perf/floor/pg_http_floor.c`, **empty C program** "
                "`bench/perf/floor/empty.c`):", "", *ext.target_lines(self.ext_rows)]
        out += self._polling_markdown()
        out += self._footprint_markdown()
        return "\n".join(out) + "\n"

    def _polling_markdown(self):
        c = self.cfg
        out = [
            "",
            f"### dbcheck-agent under polling (PostgreSQL: {c['seconds']} s per row)",
            "",
            "Lab: etcd + 3 Patroni members, one agent per member (`interval = 1s`); the pollers ask the "
            "leader's agent for `pg_write` and Patroni's REST API on the leader for `/primary`. Agent-check "
            "port: our epoll client (`bench/perf/load/agent_poll.c`: one TCP connection per answer, "
            "the backend "
            "name sent as soon as it is connected, as HAProxy's agent-check). "
            "HTTP: `wrk -c N -t 2 -d S --latency` on `/backend/pg_write` and on Patroni `/primary`. The "
            "agent keeps an HTTP/1.1 connection alive (wrk's keep-alive rows reuse it), while Patroni 3.0.2 "
            "answers HTTP/1.0 and closes, so there every answer costs a new connection; the "
            "`Connection: close` rows, one connection per answer on both, are the like-for-like comparison "
            "(and HAProxy's httpchk). The load clients share the same 2 cores with the agent, Patroni "
            "and PostgreSQL. Errors: Patroni's closes (one wrk read error per answer) are not counted; the "
            f"agent's HTTP port accepts at most {HTTP_PER_IP_LIMIT} connections from one IP address, its "
            f"agent-check port {AGENT_PER_IP_LIMIT} (all the pollers come from 127.0.0.1), so beyond that "
            "they see refused or reset connections (counted). PG stmts/s: "
            "statements of the check role on all three members (pg_stat_statements), i.e. all three "
            "agents' rounds.",
            "",
            "| pollers | endpoint | answers/s | vs Patroni (close) | p50 ms | p99 ms | errors | PG stmts/s | "
            "agent CPU % | agent RSS MiB |",
            "| ---: | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
        ]
        patroni = {n: r for n, name, r, *_ in self.poll_rows if name == "Patroni /primary, Connection: close"}
        for n, name, r, stmts, cpu, rss in self.poll_rows:
            ref = patroni.get(n)
            ratio = f"{r.rate / ref.rate:.1f}×" if ref and ref.rate else "—"
            errors = (r.errors if not name.startswith("Patroni")
                      else {k: v for k, v in r.errors.items() if k != "read"})
            out.append(f"| {n} | {name} | {r.rate:.0f} | {ratio} | {r.p50_ms:.2f} | {r.p99_ms:.2f} | "
                       f"{_errors(errors)} | {_opt(stmts, '.1f')} | {_opt(cpu, '.0f')} | "
                       f"{_opt(rss, '.1f')} |")
        out += [
            "",
            f"### dbcheck-agent under polling (Redis: {c['seconds']} s per row)",
            "",
            "Lab: master + replica + 3 Sentinels, one agent per data node (`interval = 1s`, Sentinel events "
            "subscribed); the pollers ask the master's agent for `redis_write` on the agent-check port. "
            "Redis cmds/s: `total_commands_processed` on the master, which also counts the Sentinels' and "
            "the replica's own traffic.",
            "",
            "| pollers | answers/s | p50 ms | p99 ms | errors | Redis cmds/s on the master | agent CPU % | "
            "agent RSS MiB |",
            "| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
        ]
        for n, r, cmds, cpu, rss in self.redis_rows:
            out.append(f"| {n} | {r.rate:.0f} | {r.p50_ms:.2f} | {r.p99_ms:.2f} | {_errors(r.errors)} | "
                       f"{cmds:.1f} | {cpu:.0f} | {rss:.1f} |")
        out += self._throughput_target()
        labels = {
            "PostgreSQL": "DB stmts/s: the check role's statements on all three members "
                          "(pg_stat_statements).",
            "Redis": "DB stmts/s: `total_commands_processed` on the master (Sentinels' and replication's "
                     "included); agent-check port only.",
        }
        for engine, rows in self.open_rows.items():
            out += openloop.markdown(rows, engine, labels[engine], c["open_seconds"])
        return out

    def _throughput_target(self):
        """The issue-15 line: the agent's closed-loop throughput (agent-check port and HTTP with
        one connection per answer) over Patroni's GET /primary at the same concurrency, this run."""
        patroni = {n: r for n, name, r, *_ in self.poll_rows if name == "Patroni /primary, Connection: close"}
        out = []
        for n, name, r, *_ in self.poll_rows:
            ref = patroni.get(n)
            if n > 1 and ref and ref.rate and name in ("agent-check port", "agent HTTP, Connection: close"):
                ratio = r.rate / ref.rate
                out.append(f"- {name}, {n} pollers: {r.rate:.0f}/s = {ratio:.1f}× Patroni's GET /primary "
                           f"({ref.rate:.0f}/s) {'✓' if ratio >= 20 else '✗'} (target ≥ 20×)")
        return ["", "Closed-loop throughput against the issue-15 target, same run:", ""] + out if out else []


def shipped_dbcheck(work):
    """dbcheck as the package ships it, for the external-check figures: `cmake --install build
    --strip` into work/shipped (stripped, its client modules beside it in lib/dbcheck/, as in
    /usr); $DBCHECK_BIN itself when set. The build tree's binary carries 36 MB of debug
    sections, which cost nothing to map but are not what a host runs."""
    if os.environ.get("DBCHECK_BIN"):
        return DBCHECK
    prefix = work / "shipped"
    subprocess.run(["cmake", "--install", str(REPO / "build"), "--prefix", str(prefix), "--strip"],
                   check=True, stdout=subprocess.DEVNULL)
    return prefix / "bin" / "dbcheck"


def build_tools(out_dir):
    """Compile each of TOOLS with `cc -O2` into out_dir; returns {name: path}. Raises
    CalledProcessError (the compiler's message is on stderr) on failure."""
    out_dir.mkdir(parents=True, exist_ok=True)
    built = {}
    for name, (source, packages) in TOOLS.items():
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", *packages], check=True,
                               capture_output=True, text=True).stdout.split() if packages else []
        built[name] = out_dir / name
        subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-o", str(built[name]), str(HERE / source),
                        *flags, "-lpthread"], check=True)
    return built


def _opt(value, fmt):
    return "—" if value is None else format(value, fmt)


def _errors(errors):
    return ", ".join(f"{k} {v}" for k, v in errors.items()) or "0"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="short run that keeps the benchmarks working (CI)")
    args = ap.parse_args()
    mode = "smoke" if args.smoke else "full"
    command = "bench/perf/run --smoke" if args.smoke else "bench/perf/run"
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="dbcheck-bench.", dir="/tmp"))
    work.chmod(0o755)
    bench = Bench(mode, work)
    try:
        bench.tools = build_tools(BUILD_BENCH)
        bench.dbcheck = shipped_dbcheck(work)
        bench.part("PostgreSQL lab", bench.postgres)
        bench.part("Redis lab", bench.redis)
    finally:
        if bench.failures:
            print(f"keeping {work} (logs)")
        else:
            shutil.rmtree(work, ignore_errors=True)
    text = bench.markdown(command, time.monotonic() - t0)
    print("\n" + text)
    if bench.failures:
        print(f"{len(bench.failures)} failure(s); docs/results.md not written:\n  "
              + "\n  ".join(bench.failures))
        return 1
    results.write_section("bench", text)
    results.write_section("cluster-bill", bench.bill.markdown(command))
    print(f"written to {results.RESULTS} (section bench) in {time.monotonic() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
