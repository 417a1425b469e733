"""The HAProxy configurations compared by the failover proof, each with its detection bound.

Every variant has a write frontend/backend (`pg_write` or `redis_write`) with `balance first`
and `on-marked-down shutdown-sessions`. The anchors (the usual checks: a, b) run twice: at the
external-check example's inter 1s / fall 2 / rise 3, beside dbcheck's external check (c), and
at the agent example's inter 1s / fall 1 / rise 1 (a1, b1), beside dbcheck-agent (d). So each
dbcheck configuration is compared with anchors detecting as often and as fast: what differs is
what the check asks, not how often. (The agent example's agent-inter and downinter 250ms are
how often HAProxy reads the agent's cached verdict, which reaches no database; the agent itself
probes every second, the anchors' inter, and every 250 ms while a change is being confirmed.)
Every HAProxy logs with its own ISO 8601 timestamps, so the proof reads when each server went
UP or DOWN from HAProxy's own lines.

Detection bound: the longest time from the moment the cluster manager names a new primary
until HAProxy stops sending writes to the old one, by the configuration's own arithmetic.
HAProxy schedules a server's next check `inter` after the previous one ended, and marks it
down after `fall` consecutive failures, each lasting at most the check's time limit t:
    B_check = inter + fall * t + (fall - 1) * inter      (no fastinter/downinter set)
For the agent (HAProxy's agent rise/fall are 1; the agent damps, a writer that is not the
primary goes down at its next round):
    B_agent = interval + t + agent-inter
"""

import dataclasses
import re
import shutil
from dataclasses import dataclass

from lab import redis as redis_fx
from lab.agent import render_agent_example, render_redis_agent_example
from lab.haproxy import TIMESTAMPED_LOG, render_example_for, render_redis_example_for, timestamped_log
from lab.patroni import APP_DB, HC_PASSWORD, HC_USER, PG_BIN
from lab.ports import free_ports

INTER = 1.0
# (fall, rise) of the external-check example and of the agent example, as their settings label.
EXTERNAL_SETTINGS, AGENT_SETTINGS = (2, 3), (1, 1)
HAPROXY_CHECK_TIMEOUT = 1.0  # `timeout check` for the naive variants
DBCHECK_TIMEOUT = 0.8  # dbcheck's `timeout` in the configs the fixtures write
AGENT_INTERVAL, AGENT_INTER = 1.0, 0.25  # dbcheck-agent interval, HAProxy agent-inter


def check_bound(t_check, inter=INTER, fall=EXTERNAL_SETTINGS[0]):
    """B_check (module docstring), in seconds."""
    return inter + fall * t_check + (fall - 1) * inter


AGENT_BOUND = AGENT_INTERVAL + DBCHECK_TIMEOUT + AGENT_INTER


def settings_label(fall_rise):
    """'inter 1s fall F rise R', the detection settings a variant runs at."""
    return f"inter 1s fall {fall_rise[0]} rise {fall_rise[1]}"


@dataclass
class Variant:
    """One HAProxy configuration under test: key ('a', 'a1', ..., 'd'), label, HAProxy config
    text, write frontend port, its write backend, its detection bound in seconds, its detection
    settings (settings_label()), whether it is dbcheck (else an anchor: the gate compares each
    dbcheck variant with the anchors of its settings), and whether its servers are named by port."""

    key: str
    label: str
    cfg: str
    write_port: int
    backend: str
    bound: float
    settings: str
    dbcheck: bool = False
    names_by_port: bool = False


# nbthread 1 as timestamped_log() sets for the dbcheck configurations: every configuration runs
# alike, and with more threads HAProxy 2.6 drops a log line under load (a lost state line would
# read as a server that never changed).
HEAD = """global
    {log}
    nbthread 1
    user haproxy
    group haproxy
    external-check
    insecure-fork-wanted
    stats socket {sock} mode 660 level admin
    stats timeout 30s

defaults
    log global
    mode tcp
    option tcplog
    option log-health-checks
    timeout connect 1s
    timeout client 30m
    timeout server 30m
    timeout check 1s

frontend {backend}
    bind 127.0.0.1:{port}
    default_backend {backend}

backend {backend}
    balance first
    default-server inter 1s fall {fall} rise {rise} on-marked-down shutdown-sessions
"""


def _head(sock, backend, fall_rise):
    port = free_ports(1)[0]
    return HEAD.format(log=TIMESTAMPED_LOG, sock=sock, backend=backend, port=port,
                       fall=fall_rise[0], rise=fall_rise[1]), port


def _key(letter, fall_rise):
    """'a' at the external example's settings, 'a1' at the agent example's."""
    return letter if fall_rise == EXTERNAL_SETTINGS else f"{letter}1"


# ------------------------------------------------------------------ PostgreSQL
def pg_patroni_httpchk(cluster, workdir, fall_rise=EXTERNAL_SETTINGS):
    """(a) Patroni's documented check: HTTP GET /primary on each member's REST API (200 only
    on the member holding the leader lock and running as primary)."""
    key = _key("a", fall_rise)
    head, port = _head(workdir / key / "admin.sock", "pg_write", fall_rise)
    lines = ["    option httpchk GET /primary", "    http-check expect status 200"]
    lines += [f"    server {m.name} {m.pg_addr} check port {m.rest_port}" for m in cluster.members()]
    return Variant(key, "Patroni httpchk GET /primary", head + "\n".join(lines) + "\n", port, "pg_write",
                   check_bound(HAPROXY_CHECK_TIMEOUT, fall=fall_rise[0]), settings_label(fall_rise))


def pg_node_only(cluster, workdir, fall_rise=EXTERNAL_SETTINGS):
    """(b) the node asked about itself: an external check running
    psql -tAc 'select pg_is_in_recovery()' (the Percona pattern), UP when it prints f.
    The release's psql binary itself, not Debian's /usr/bin/psql: that is a Perl wrapper that
    costs about 60 ms of CPU per check here, a handicap no anchor should carry, and load that
    slows every other configuration's checks in the same lab."""
    key = _key("b", fall_rise)
    d = workdir / key
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o755)
    passfile = d / "pgpass"
    passfile.write_text(f"*:*:*:{HC_USER}:{HC_PASSWORD}\n")
    passfile.chmod(0o600)
    shutil.chown(passfile, "haproxy", "haproxy")
    script = d / "pg-node-check"
    script.write_text(f"""#!/bin/sh
# HAProxy external check: $3 = server address, $4 = server port.
r=$(PGPASSFILE={passfile} PGCONNECT_TIMEOUT=1 {PG_BIN / "psql"} -X -h "$3" -p "$4" -U {HC_USER} -d {APP_DB} \\
    -tAc 'select pg_is_in_recovery()' 2>/dev/null)
[ "$r" = f ]
""")
    script.chmod(0o755)
    head, port = _head(d / "admin.sock", "pg_write", fall_rise)
    lines = ["    option external-check", '    external-check path "/usr/bin:/bin"',
             f"    external-check command {script}"]
    lines += [f"    server {m.name} {m.pg_addr} check" for m in cluster.members()]
    return Variant(key, "node only: pg_is_in_recovery()", head + "\n".join(lines) + "\n", port, "pg_write",
                   check_bound(HAPROXY_CHECK_TIMEOUT, fall=fall_rise[0]), settings_label(fall_rise))


# The keywords that open an HAProxy configuration section (HAProxy does not require the
# lines inside a section to be indented, so a section ends only where another begins).
SECTION_KEYWORDS = {"global", "defaults", "frontend", "backend", "listen", "userlist", "peers",
                    "resolvers", "mailers", "program", "http-errors", "ring", "cache", "log-forward"}


def without_proxies(cfg, names):
    """HAProxy config text `cfg` without its `frontend`/`backend` sections named in `names`."""
    out, skipping = [], False
    for line in cfg.splitlines(keepends=True):
        words = line.split("#", 1)[0].split()
        if words and words[0] in SECTION_KEYWORDS:
            skipping = words[0] in ("frontend", "backend") and len(words) > 1 and words[1] in names
        if not skipping:
            out.append(line)
    return "".join(out)


def pg_dbcheck(cluster, workdir, wrapper, readers=True):
    """(c) haproxy-examples/postgres-patroni.cfg with dbcheck as its external check; without
    its read frontend and backend unless `readers`."""
    cfg, ports = render_example_for(cluster, wrapper, workdir / "c" / "admin.sock")
    if not readers:
        cfg = without_proxies(cfg, {"pg_read"})
    return Variant("c", "dbcheck external-check", timestamped_log(cfg), ports["pg_write"], "pg_write",
                   check_bound(DBCHECK_TIMEOUT), settings_label(EXTERNAL_SETTINGS), dbcheck=True)


def pg_agent(cluster, workdir, agents):
    """(d) haproxy-examples/postgres-patroni-agent.cfg with one dbcheck-agent per member."""
    cfg, ports = render_agent_example(cluster, agents, workdir / "d" / "admin.sock")
    return Variant("d", "dbcheck-agent", timestamped_log(cfg), ports["pg_write"], "pg_write", AGENT_BOUND,
                   settings_label(AGENT_SETTINGS), dbcheck=True)


def pg_variants(cluster, workdir, wrapper, agents, readers=True):
    """Every PostgreSQL configuration, each dbcheck one after the anchors of its settings;
    dbcheck's external check without the example's read backend unless `readers`."""
    return [pg_patroni_httpchk(cluster, workdir), pg_node_only(cluster, workdir),
            pg_dbcheck(cluster, workdir, wrapper, readers),
            pg_patroni_httpchk(cluster, workdir, AGENT_SETTINGS),
            pg_node_only(cluster, workdir, AGENT_SETTINGS),
            pg_agent(cluster, workdir, agents)]


# ------------------------------------------------------------------ Redis
def _auth_line():
    return f'    tcp-check send "AUTH {redis_fx.HC_USER} {redis_fx.HC_PASSWORD}\\r\\n"\n' \
           "    tcp-check expect string +OK\n"


def redis_role_only(cluster, workdir, fall_rise=EXTERNAL_SETTINGS):
    """(a) the usual tcp-check: AUTH, ROLE, expect 'master' (the node asked about itself)."""
    key = _key("a", fall_rise)
    head, port = _head(workdir / key / "admin.sock", "redis_write", fall_rise)
    body = "    option tcp-check\n    tcp-check connect\n" + _auth_line() + \
           '    tcp-check send "ROLE\\r\\n"\n    tcp-check expect string master\n'
    body += "".join(f"    server {n.name} {n.addr} check\n" for n in cluster.nodes())
    return Variant(key, "tcp-check ROLE only", head + body, port, "redis_write",
                   check_bound(HAPROXY_CHECK_TIMEOUT, fall=fall_rise[0]), settings_label(fall_rise))


def redis_seed_002(cluster, workdir, fall_rise=EXTERNAL_SETTINGS):
    """(b) the seed-002 config: one Sentinel must name the server, then ROLE master.
    Adapted to a lab where every node may be 127.0.0.1: the server's *name* is its port, and the
    check expects that port in Sentinel's GET-MASTER-ADDR-BY-NAME reply (the seed matches
    %[srv_name] against the address, which on loopback would match every node). It asks the
    first Sentinel, which in the partition lab lives on the first master's host."""
    key = _key("b", fall_rise)
    sentinel = cluster.sentinels()[0]
    head, port = _head(workdir / key / "admin.sock", "redis_write", fall_rise)
    body = ("    option tcp-check\n"
            f"    tcp-check connect addr {sentinel.ip} port {sentinel.port}\n" + _auth_line() +
            f'    tcp-check send "SENTINEL get-master-addr-by-name {redis_fx.MASTER_NAME}\\r\\n"\n'
            '    tcp-check expect string-lf "\\r\\n%[srv_name]\\r\\n"\n'
            "    tcp-check connect\n" + _auth_line() +
            '    tcp-check send "ROLE\\r\\n"\n    tcp-check expect string master\n')
    body += "".join(f"    server {n.port} {n.addr} check\n" for n in cluster.nodes())
    return Variant(key, "tcp-check one Sentinel + ROLE", head + body, port, "redis_write",
                   check_bound(HAPROXY_CHECK_TIMEOUT, fall=fall_rise[0]), settings_label(fall_rise),
                   names_by_port=True)


def redis_dbcheck(cluster, workdir, wrapper, readers=True):
    """(c) haproxy-examples/redis-sentinel.cfg with dbcheck as its external check; without its
    read frontend and backend unless `readers`."""
    cfg, ports = render_redis_example_for(cluster, wrapper, workdir / "c" / "admin.sock")
    if not readers:
        cfg = without_proxies(cfg, {"redis_read"})
    return Variant("c", "dbcheck external-check", timestamped_log(cfg), ports["redis_write"], "redis_write",
                   check_bound(DBCHECK_TIMEOUT), settings_label(EXTERNAL_SETTINGS), dbcheck=True)


def redis_agent(cluster, workdir, agents):
    """(d) haproxy-examples/redis-sentinel-agent.cfg with one dbcheck-agent per data node."""
    cfg, ports = render_redis_agent_example(cluster, agents, workdir / "d" / "admin.sock")
    return Variant("d", "dbcheck-agent", timestamped_log(cfg), ports["redis_write"], "redis_write",
                   AGENT_BOUND, settings_label(AGENT_SETTINGS), dbcheck=True)


def over_tls(v, server_options):
    """Variant v for nodes and Sentinels that take TLS only: `server_options` (ssl, the CA to
    verify against, HAProxy's client certificate) on every server line, and every tcp-check
    connect rule ciphered: such a rule opens a plain connection unless it says `ssl` (or
    `default`), whatever the server line or check-ssl says. The checks sent elsewhere stay
    plain: HAProxy ciphers a check to another port (dbcheck-agent's HTTP health port) only with
    check-ssl, an agent-check never, and an external check is dbcheck's own connection."""
    cfg = re.sub(r"^(\s*server \S+ \S+)", lambda m: f"{m.group(1)} {server_options}", v.cfg, flags=re.M)
    cfg = re.sub(r"^(\s*tcp-check connect)\b", r"\1 ssl", cfg, flags=re.M)
    return dataclasses.replace(v, cfg=cfg)


def redis_variants(cluster, workdir, wrapper, agents, tls=None, readers=True):
    """Every Redis configuration, each dbcheck one after the anchors of its settings; with
    `tls` (HAProxy server options), each over_tls(); dbcheck's external check without the
    example's read backend unless `readers`."""
    variants = [redis_role_only(cluster, workdir), redis_seed_002(cluster, workdir),
                redis_dbcheck(cluster, workdir, wrapper, readers),
                redis_role_only(cluster, workdir, AGENT_SETTINGS),
                redis_seed_002(cluster, workdir, AGENT_SETTINGS),
                redis_agent(cluster, workdir, agents)]
    return [over_tls(v, tls) for v in variants] if tls else variants


def anchors_of(variants, v):
    """The anchors run at dbcheck variant v's detection settings."""
    return [a for a in variants if not a.dbcheck and a.settings == v.settings]


__all__ = ["Variant", "check_bound", "AGENT_BOUND", "pg_variants", "redis_variants", "anchors_of"]
