"""dbcheck demo: a real lab on 127.0.0.1 (etcd, 3 Patroni members on PostgreSQL 15 or 17; 2 Redis
nodes and 3 Sentinels; the release's HAProxy using dbcheck as its external check for both), the
verdicts for every node, and where HAProxy routes writes and reads. Run through ./scripts/demo (root, Debian's python3).

  --keep        leave everything running; prints how to explore it and how to stop it
  --switchover  also switch the Patroni leader and the Redis master over, and show HAProxy
                following them
  --partition   instead: watch a network partition of the Patroni leader's host, then of the
                Redis master's host, with dbcheck and the usual checks side by side
                (scripts/demo_partition.py; every host a network namespace)
  --peer P      run the other peer the release offers: patroni4 (Debian 12: Patroni 4.1.4;
                Debian 13's own is 4.0), valkey8 (Valkey 8.0.1, or 8.1 on Debian 13); give it
                twice for both (lab/peers.py)
"""  # noqa: E501 - the --help text, kept as it was

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg2

# The repository root (the lab package) is on PYTHONPATH: scripts/demo sources scripts/pythonpath.
from lab import peers
from lab.binaries import agent_bin, dbcheck_bin
from lab.dbcheck import write_check_wrapper, write_dbcheck_config, write_redis_config
from lab.haproxy import HAProxy, render_example_for, render_redis_example_for
from lab.redis import ADMIN_PASSWORD, RedisSentinelCluster, redis_pipeline
from lab.patroni import APP_DB, APP_PASSWORD, APP_USER, PatroniCluster
from lab.agent import (render_agent_example, render_redis_agent_example,
                       start_pg_agents, start_redis_agents)
from lab.procs import wait_until

# --peer: the environment variable lab/peers.py reads and its value.
PEERS = {"patroni4": ("DBCHECK_PATRONI", "4"), "valkey8": ("DBCHECK_REDIS", "valkey")}

DBCHECK = dbcheck_bin()
AGENT = agent_bin()
# What the demo showed that was not what it should be: each a line; any makes the demo exit 1
# (./scripts/test runs the demo, so a wrong route fails the suite).
WRONG = []


def expect(ok, what):
    """Note `what` as wrong (and say so at once) unless `ok`."""
    if not ok:
        WRONG.append(what)
        print(f"  !! WRONG: {what}", flush=True)


def explain(config, backend, member):
    """`dbcheck explain --json` for one node, run as the operator would (root): (exit code,
    the verdict's reason, or dbcheck's own error when it printed no report)."""
    p = subprocess.run([str(DBCHECK), "--config", str(config), "explain", backend, member.addr,
                        "--json"],
                       capture_output=True, text=True, timeout=10)
    try:
        return p.returncode, json.loads(p.stdout)["verdict"]["reason"]
    except (ValueError, KeyError):
        return p.returncode, f"dbcheck exited {p.returncode}: {p.stderr.strip()}"


def routed_to(port, cluster):
    """Which member a new connection through HAProxy's `port` reaches, and its role."""
    try:
        conn = psycopg2.connect(host="127.0.0.1", port=port, user=APP_USER, password=APP_PASSWORD,
                                dbname=APP_DB, connect_timeout=3)
    except psycopg2.Error as e:
        return f"no server ({str(e).strip().splitlines()[0]})"
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT inet_server_port(), pg_is_in_recovery()")
            pg_port, in_recovery = cur.fetchone()
    finally:
        conn.close()
    name = next((m.name for m in cluster.members() if m.pg_port == pg_port), f"port {pg_port}")
    return f"{name} ({'replica' if in_recovery else 'primary'})"


def redis_routed_to(port, cluster):
    """Which Redis node a new connection through HAProxy's `port` reaches, and its role."""
    try:
        info, role = redis_pipeline(port, [("INFO", "server"), ("ROLE",)], user="default",
                                    password=ADMIN_PASSWORD, timeout=2)
    except OSError as e:
        return f"no server ({e})"
    tcp_port = next(int(line.split(":")[1]) for line in info.splitlines() if line.startswith("tcp_port:"))
    name = next((n.name for n in cluster.nodes() if n.port == tcp_port), f"port {tcp_port}")
    return f"{name} ({role[0]})"


def show_redis(cluster, config, hap, ports):
    """The Redis lab: the master the Sentinels name, the verdict table, and where HAProxy
    sends a write and a read connection."""
    m = cluster.master()
    print(f"\nSentinel majority names: {m.name if m else 'none'} (3 Sentinels, quorum 2)")
    expect(m is not None, "no master named by a Sentinel majority")
    show_backends(cluster, cluster.nodes(), config, hap, ports, redis_routed_to, node_width=7,
                  backends=("redis_write", "redis_read"), columns=("write", "read"),
                  writer=m.name if m else None)
    read = redis_routed_to(ports['redis_read'], cluster)
    print(f"a read connection (port {ports['redis_read']}) lands on: {read}")
    expect(read.endswith(("(slave)", "(replica)")), f"a read connection landed on {read}, not on a replica")


def show_agents(title, agents, backends, hap):
    """Each agent's answers (as HAProxy's agent-check gets them) and HAProxy's view."""
    print(f"\n{title}: one dbcheck-agent per node; agent-check answers:")
    for a in agents:
        answers = "   ".join(f"{b}: {a.ask(b).strip()[:90]}" for b in backends)
        print(f"  {a.name:14} {answers}")
    print("  HAProxy (agent-check + httpchk to the agent) UP: " +
          ", ".join(f"{b}={hap.servers_up(b)}" for b in backends))


def show_backends(cluster, nodes, config, hap, ports, route, node_width, backends, columns, writer):
    """The verdict table: a row per node of `nodes` (name, address, PASS/fail of
    `dbcheck explain` for each of the write and read `backends`, headed `columns`, then
    both reasons); HAProxy's UP servers per backend; and where route(port, cluster)
    says a write connection through HAProxy lands. Only `writer` (the node the manager names)
    may pass the write backend and only the others the read one: anything else is WRONG."""
    width = max(map(len, columns)) + 1
    print(f"{'node':{node_width}} {'address':17} " + "".join(f"{c:{width}} " for c in columns) +
          f"reason ({' | '.join(backends)})")
    for n in nodes:
        results = [explain(config, b, n) for b in backends]
        print(f"{n.name:{node_width}} {n.addr:17} " +
              "".join(f"{'PASS' if rc == 0 else 'fail':{width}} " for rc, _ in results) +
              " | ".join(reason for _, reason in results))
        for (rc, reason), backend, should in zip(results, backends, (n.name == writer, n.name != writer)):
            expect((rc == 0) == should, f"{n.name} {'failed' if should else 'passed'} {backend}: {reason}")
    up = {b: hap.servers_up(b) for b in backends}
    print("HAProxy servers UP: " + " ".join(f"{b}={up[b]}" for b in backends))
    expect(up[backends[0]] == [writer], f"HAProxy has {up[backends[0]]} UP in {backends[0]}, not [{writer}]")
    write = backends[0]
    landed = route(ports[write], cluster)
    print(f"a write connection (port {ports[write]}) lands on: {landed}")
    expect(landed.startswith(f"{writer} ("), f"a write connection landed on {landed}, not on {writer}")


def show(cluster, config, hap, ports):
    """The PostgreSQL lab: the Patroni leader, the verdict table, and where HAProxy
    sends a write connection and six read connections."""
    leader = cluster.leader()
    print(f"\nPatroni leader: {leader.name if leader else 'none'}")
    expect(leader is not None, "Patroni names no leader")
    show_backends(cluster, cluster.members(), config, hap, ports, routed_to, node_width=6,
                  backends=("pg_write", "pg_read"), columns=("pg_write", "pg_read"),
                  writer=leader.name if leader else None)
    reads = sorted({routed_to(ports['pg_read'], cluster) for _ in range(6)})
    print(f"read connections (port {ports['pg_read']}) land on: {', '.join(reads)}")
    expect(all(r.endswith("(replica)") for r in reads), f"a read connection landed on {reads}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", action="store_true", help="leave the lab running")
    ap.add_argument("--switchover", action="store_true", help="also demonstrate a switchover")
    ap.add_argument("--partition", action="store_true",
                    help="instead, watch a network partition of the primary's host (N1, N2)")
    ap.add_argument("--peer", choices=sorted(PEERS), action="append", default=[],
                    help="the current peer instead of Debian's (patroni4, valkey8; repeatable)")
    args = ap.parse_args()
    wanted = dict(PEERS[p] for p in args.peer)
    if any(os.environ.get(var) != value for var, value in wanted.items()):
        # The lab modules choose their binaries when imported (lab/peers.py): start over with
        # the peers chosen in the environment.
        os.environ.update(wanted)
        os.execv(sys.executable, [sys.executable, *sys.argv])
    print(f"peers: {peers.describe_engine('pg')}; {peers.describe_engine('redis')}")
    if args.partition:
        # scripts/ is on sys.path as this script's own directory; the partition demo drives the
        # failover proof's own modules, which import one another by their plain names.
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "failover"))
        import demo_partition  # only this mode needs the partition lab
        return demo_partition.main()

    work = Path(tempfile.mkdtemp(prefix="dbcheck-demo.", dir="/tmp"))
    work.chmod(0o755)
    print(f"lab directory: {work}")
    cluster = PatroniCluster(work / "pg")
    redis = RedisSentinelCluster(work / "redis")
    hap = rhap = None
    started_agents, started_haproxies = [], []
    try:
        print(f"starting etcd + 3 Patroni members (PostgreSQL {peers.pg_version()}) ...")
        cluster.start()
        print(f"cluster up in {cluster.up_seconds:.1f}s")
        print("starting 2 Redis nodes + 3 Sentinels ...")
        redis.start()
        print(f"Redis up in {redis.up_seconds:.1f}s")
        config = write_dbcheck_config(work / "dbcheck", cluster, share=True)  # the defaults
        wrapper = write_check_wrapper(work / "dbcheck" / "dbcheck-wrapper", DBCHECK, config)
        cfg, ports = render_example_for(cluster, wrapper, work / "haproxy" / "admin.sock")
        hap = HAProxy(work / "haproxy", cfg).start()
        rconfig = write_redis_config(work / "dbcheck-redis", redis)
        rwrapper = write_check_wrapper(work / "dbcheck-redis" / "dbcheck-wrapper", DBCHECK, rconfig)
        rcfg, rports = render_redis_example_for(redis, rwrapper, work / "haproxy-redis" / "admin.sock")
        rhap = HAProxy(work / "haproxy-redis", rcfg).start()
        leader = cluster.leader()
        rmaster = redis.wait_stable()
        # Wait for rise: the writer backends need 3 passes before their server counts as UP.
        wait_until(lambda: hap.servers_up("pg_write") == [leader.name], 20,
                   "HAProxy routes writes to the leader")
        wait_until(lambda: len(hap.servers_up("pg_read")) == 2, 20, "HAProxy routes reads to both replicas")
        wait_until(lambda: rhap.servers_up("redis_write") == [rmaster.name], 20,
                   "HAProxy routes Redis writes")
        print(f"dbcheck configs: {config}, {rconfig}")
        print(f"HAProxy configs: {work / 'haproxy' / 'haproxy.cfg'}, "
              f"{work / 'haproxy-redis' / 'haproxy.cfg'}")
        show(cluster, config, hap, ports)
        show_redis(redis, rconfig, rhap, rports)

        # The same clusters through dbcheck-agent: cached verdicts, one probe round per second.
        pg_agents = start_pg_agents(work / "agents", cluster, AGENT, interval="1s")
        redis_agents = start_redis_agents(work / "agents", redis, AGENT, interval="1s")
        started_agents.extend(pg_agents + redis_agents)
        acfg, _ = render_agent_example(cluster, pg_agents, work / "haproxy-agent" / "admin.sock")
        ahap = HAProxy(work / "haproxy-agent", acfg).start()
        racfg, _ = render_redis_agent_example(redis, redis_agents,
                                              work / "haproxy-agent-redis" / "admin.sock")
        rahap = HAProxy(work / "haproxy-agent-redis", racfg).start()
        started_haproxies.extend([ahap, rahap])
        wait_until(lambda: ahap.servers_up("pg_write") == [leader.name], 20, "agent-checked pg_write")
        wait_until(lambda: rahap.servers_up("redis_write") == [rmaster.name], 20, "agent-checked redis_write")
        # HAProxy starts every server UP until its first check: wait for the readers to settle.
        wait_until(lambda: sorted(ahap.servers_up("pg_read")) == sorted(m.name for m in cluster.replicas()),
                   20, "agent-checked pg_read")
        wait_until(lambda: len(rahap.servers_up("redis_read")) == 1, 20, "agent-checked redis_read")
        show_agents("PostgreSQL", pg_agents, ["pg_write", "pg_read"], ahap)
        show_agents("Redis", redis_agents, ["redis_write", "redis_read"], rahap)
        print(f"  e.g. curl http://127.0.0.1:{pg_agents[0].http_port}/health | /metrics | /backend/pg_write")

        if args.switchover:
            new = next(m for m in cluster.members() if m.name != leader.name)
            print(f"\npatronictl switchover {leader.name} -> {new.name} ...")
            t0 = time.monotonic()
            cluster.switchover(new.name, leader=leader.name)
            wait_until(lambda: hap.servers_up("pg_write") == [new.name], 60,
                       "HAProxy routes writes to the new leader")
            print(f"HAProxy routes writes to {new.name} {time.monotonic() - t0:.1f}s after the request")
            cluster.wait_healthy()
            wait_until(lambda: len(hap.servers_up("pg_read")) == 2, 60, "both replicas back in pg_read")
            show(cluster, config, hap, ports)
            print(f"\nSENTINEL FAILOVER (master {rmaster.name}) ...")
            t0 = time.monotonic()
            rnew = redis.failover()
            wait_until(lambda: rhap.servers_up("redis_write") == [rnew.name], 60,
                       "HAProxy routes Redis writes to the new master")
            print(f"HAProxy routes Redis writes to {rnew.name} {time.monotonic() - t0:.1f}s after the "
                  "request (the old master answers ROLE master until Sentinel converts it, ~10 s: "
                  "it was out at once)")
            redis.wait_stable(timeout=40)
            wait_until(lambda: rhap.servers_up("redis_read") == [rmaster.name], 30,
                       "the old master back as a reader")
            show_redis(redis, rconfig, rhap, rports)

        if args.keep:
            rmaster = redis.master() or rmaster  # after --switchover, the new one
            print(f"""
The lab keeps running (--keep). In another shell, try:
  {DBCHECK} --config {config} explain pg_read {cluster.replicas()[0].pg_addr}
  echo 'show stat' | socat stdio UNIX-CONNECT:{work / 'haproxy' / 'admin.sock'} | cut -d, -f1,2,18
  PGPASSWORD={APP_PASSWORD} psql -h 127.0.0.1 -p {ports['pg_write']} -U {APP_USER} {APP_DB}
  {DBCHECK} --config {rconfig} explain redis_write {rmaster.addr}
  REDISCLI_AUTH={ADMIN_PASSWORD} redis-cli -p {rports['redis_write']} --user default ROLE
Press Ctrl-C (or send SIGTERM to {os.getpid()}) to stop everything the demo started.""", flush=True)
            signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                print("\nstopping the lab ...")
        if WRONG:
            print(f"\nthe demo showed {len(WRONG)} thing(s) that were wrong:\n  " + "\n  ".join(WRONG))
            return 1
        print("\nevery verdict and route was as it should be")
        return 0
    finally:
        for h in [hap, rhap, *started_haproxies]:
            if h is not None:
                h.stop()
        for a in started_agents:
            a.stop()
        redis.stop()
        cluster.stop()
        subprocess.run(["rm", "-rf", str(work)], check=False)


if __name__ == "__main__":
    sys.exit(main())
