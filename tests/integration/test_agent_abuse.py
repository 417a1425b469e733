"""Who may talk to the agent, and what it tells them.

The agent under abuse from its own network, with a real HAProxy polling it
(haproxy-examples/postgres-patroni-agent.cfg): an address outside `allow` is refused on both
ports; 1,000 slowloris clients on the HTTP port and 10,000 idle connections on the agent port,
from 16 addresses inside `allow`, for 60 s, change nothing HAProxy sees, and a real poller is
still answered well inside HAProxy's check timeout (its p99 is reported; the 5 ms target is
not asserted: see the bound below). Each hostile client reconnects a second after the agent closes
it: a population of slow and idle clients, as the issue names them, not a connection-rate flood
(SYN floods are the kernel's and the firewall's: SYN cookies, the unit's IPAddressAllow=).

The hostile clients and the poller run as processes of their own (lab/abuse.py): the
attackers at nice 10, standing in for hosts of their own (on a real network the attackers'
CPU is not the agent's; the kernel's work for their connections still is, on both ends here),
the poller at the test's priority. The same HAProxy checks two agents nobody attacks on the same
machine at the same time: their figures are the control, what the machine itself costs a check
while the flood runs. Then the agent's HTTP port over TLS with reasons hidden, behind the same
HAProxy."""

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.agent import http_get, render_agent_example, start_pg_agents, stop_agents
from lab.procs import wait_until
from lab.ca import issue, make_ca
from lab.periodic import Periodic

REPO = Path(__file__).resolve().parents[2]  # lab.abuse runs as a module from the repository root
ATTACK_S = 60
# HAProxy and the poller ask from 127.0.0.1; the attackers from 127.0.0.16-31, also allowed:
# the worst case is a hostile neighbour the operator had to admit. 127.0.0.99 is outside.
ALLOW = ["127.0.0.1", "127.0.0.16/28"]
OUTSIDER = "127.0.0.99"


def _percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _refused(port, request):
    """Bytes the agent sent back to a client at OUTSIDER that sent `request` on `port`
    (b"" when it closed or reset the connection unanswered)."""
    with socket.socket() as s:
        s.settimeout(3)
        s.bind((OUTSIDER, 0))
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(request)
            return s.recv(4096)
        except (ConnectionResetError, BrokenPipeError):
            return b""


def _metric(agent, name, labels):
    """A counter from the agent's /metrics (0 when absent)."""
    text = http_get(agent.http_port, "/metrics", host=agent.ip)[1]
    m = re.search(rf"^{re.escape(name)}\{{{re.escape(labels)}\}} (\d+)", text, re.M)
    return int(m.group(1)) if m else 0


def _flaps(hap):
    """{(backend, server): (chkdown, UP or DOWN)} from HAProxy's stats: chkdown counts UP->DOWN
    transitions since start (the status's detail, e.g. "DOWN (agent)", names the check that
    spoke last, not a change)."""
    return {(r["pxname"], r["svname"]): (int(r["chkdown"] or 0), r["status"].split()[0])
            for r in hap.show_stat()
            if r["pxname"] in ("pg_write", "pg_read") and r["svname"] not in ("BACKEND", "FRONTEND")}


class HaproxyView(Periodic):
    """Every 100 ms, from HAProxy's stats: the UP servers of pg_write and pg_read, and how long
    HAProxy's own last check and agent check of `server` took (check_duration, agent_duration:
    milliseconds, measured by HAProxy, the real poller), and of the other servers (`control`).
    A check is seen by a few samples in a row: its duration is counted once per sample, alike
    for every check."""

    def __init__(self, hap, server):
        super().__init__("haproxy-view", 0.1, max_seconds=ATTACK_S + 60)
        self.hap, self.server = hap, server
        self.up = {"pg_write": set(), "pg_read": set()}
        self.durations = {"check": [], "agent": []}
        self.control = {"check": [], "agent": []}
        self.errors = []

    def tick(self):
        try:
            rows = self.hap.show_stat()
        except OSError as e:
            self.errors.append(str(e))
            return
        for backend in self.up:
            servers = [r for r in rows
                       if r["pxname"] == backend and r["svname"] not in ("BACKEND", "FRONTEND")]
            self.up[backend].add(tuple(sorted(r["svname"] for r in servers if r["status"].startswith("UP"))))
            for r in servers:
                into = self.durations if r["svname"] == self.server else self.control
                for kind in ("check", "agent"):
                    if r.get(f"{kind}_duration"):
                        into[kind].append(int(r[f"{kind}_duration"]))


def _spawn(workdir, name, args, hostile):
    """lab.abuse with `args`; a hostile one at nice 10: it stands for hosts of their own,
    whose CPU is not the agent's, yet keeps attacking when the machine is loaded (under
    SCHED_IDLE, beside stress-ng, the attackers opened 10,000 connections in 60 s instead of
    ~460,000: no attack at all)."""
    out = workdir / f"{name}.json"
    cmd = [*(["nice", "-n", "10"] if hostile else []), sys.executable, "-m", "lab.abuse", *args,
           "--out", str(out)]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=open(workdir / f"{name}.err", "w")), out


@pytest.fixture
def guarded_agents(workdir, pg_cluster, agent_bin):
    pg_cluster.wait_healthy()
    agents = start_pg_agents(workdir, pg_cluster, agent_bin, interval="1s", shutdown_grace="1s", allow=ALLOW)
    yield agents
    for a in agents:
        if a.daemon is not None:
            a.daemon.signal_stop()
    for a in agents:
        a.stop()


def test_agent_refuses_strangers_and_holds_under_abuse(pg_cluster, guarded_agents, haproxy_factory, workdir,
                                                       figures):
    leader = pg_cluster.wait_healthy()
    replicas = sorted(m.name for m in pg_cluster.replicas())
    a = next(x for x in guarded_agents if x.name == f"agent-{leader.name}")

    # A stranger learns nothing on either port: reset or closed before a byte is answered.
    assert _refused(a.agent_port, b"pg_write\n") == b""
    assert _refused(a.http_port, b"GET /health HTTP/1.0\r\n\r\n") == b""
    wait_until(lambda: _metric(a, "dbcheck_agent_connections_dropped_total", 'reason="not_allowed"') >= 1, 5,
               "the agent port counted the stranger")
    assert _metric(a, "dbcheck_agent_http_connections_dropped_total", 'reason="not_allowed"') >= 1

    cfg, _ = render_agent_example(pg_cluster, guarded_agents, workdir / "haproxy" / "admin.sock")
    hap = haproxy_factory(cfg)
    hap.wait_until_checked("pg_write", timeout=30)
    wait_until(lambda: hap.servers_up("pg_write") == [leader.name], 30, f"{leader.name} alone UP")
    wait_until(lambda: sorted(hap.servers_up("pg_read")) == replicas, 30, "both replicas UP")
    before = _flaps(hap)
    cut_before = _metric(a, "dbcheck_agent_http_connections_dropped_total", 'reason="deadline"')

    procs = []
    try:
        procs.append(_spawn(workdir, "slowloris", ["slowloris", "127.0.0.1", str(a.http_port),
                                                   "--clients", "1000", "--pause", "1",
                                                   "--duration", str(ATTACK_S)], True))
        procs.append(_spawn(workdir, "idle", ["idle", "127.0.0.1", str(a.agent_port), "--clients", "10000",
                                              "--pause", "1", "--duration", str(ATTACK_S)], True))
        time.sleep(2)  # the attack at full strength before the poller starts timing
        procs.append(_spawn(workdir, "poller", ["poll", "127.0.0.1", str(a.agent_port), str(a.http_port),
                                                "--every", "0.05", "--duration", str(ATTACK_S - 4)], False))
        with HaproxyView(hap, leader.name) as view:
            for p, _ in procs:
                p.wait(timeout=ATTACK_S + 60)
    finally:
        for p, _ in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
    loris, idle, poll = (json.loads(out.read_text()) for _, out in procs)
    after = _flaps(hap)
    cut = _metric(a, "dbcheck_agent_http_connections_dropped_total", 'reason="deadline"') - cut_before

    # The premise: the attack was at the strength the issue names, and the agent had to cut it.
    assert loris["opened"] >= 1000 and idle["opened"] >= 10000, (loris, idle)
    assert cut >= 16 * 16, f"only {cut} slow HTTP connections cut at the deadline"
    # HAProxy saw nothing: the same servers UP in every sample, no server went down.
    assert not view.errors, view.errors[:3]
    assert view.up == {"pg_write": {(leader.name,)}, "pg_read": {tuple(replicas)}}, view.up
    assert after == before, (before, after)
    # The real poller, HAProxy, by its own clock: its checks of the attacked agent stay fast.
    # The target is p99 <= 5 ms. It is not asserted here: the flood's kernel work on this
    # machine costs every check on it a few milliseconds, attacked agent or not (the control:
    # p99 4-6 ms at the commit that added it, the attacked agent's 5-7 ms, on the idle machine;
    # more beside stress-ng). The test holds what decides a check, well inside HAProxy's
    # `timeout check 1s` (a quarter of it), and reports both; an agent stalled by the flood
    # (38 ms before its accept queue was served ahead of silent clients' sessions) shows.
    p99_hap = {k: _percentile(v, 0.99) for k, v in view.durations.items()}
    p99_control = {k: _percentile(v, 0.99) for k, v in view.control.items()}
    assert min(len(v) for v in view.durations.values()) >= 100, {k: len(v) for k, v in view.durations.items()}
    assert p99_hap["check"] <= 250 and p99_hap["agent"] <= 250, p99_hap
    # A poller of our own asking both ports 20 times a second: every answer right. Its
    # latencies include a Python process's scheduling on this shared machine, so they are
    # reported beside HAProxy's, and bounded only far below HAProxy's `timeout check 1s`.
    assert not poll["errors"], poll["errors"][:5]
    assert set(poll["replies"]) == {"up 100%"} and set(poll["statuses"]) == {"200"}, poll
    p99_agent = _percentile(poll["agent_latencies"], 0.99) * 1000
    p99_http = _percentile(poll["http_latencies"], 0.99) * 1000
    assert max(poll["agent_latencies"] + poll["http_latencies"]) < 0.5, (p99_agent, p99_http)
    assert a.daemon.alive()
    figures("agent under abuse",
            f"{ATTACK_S}s of 1,000 slowloris clients (HTTP, {loris['opened']} connections opened, "
            f"{cut} cut at the 1 s deadline) + 10,000 idle clients (agent port, {idle['opened']} connections "
            f"opened, peak {idle['peak_open']} held by the attacker) from 16 allowed addresses: HAProxy's "
            f"pg_write/pg_read unchanged in every sample, 0 flaps; HAProxy's own check durations p99 "
            f"{p99_hap['check']} ms (httpchk), {p99_hap['agent']} ms (agent-check) over "
            f"{len(view.durations['check'])}/{len(view.durations['agent'])} samples (the two agents nobody "
            f"attacked, same HAProxy, same time: {p99_control['check']} ms, {p99_control['agent']} ms); "
            f"a Python poller: p99 "
            f"{p99_agent:.2f} ms (agent port, {len(poll['agent_latencies'])} asks), "
            f"{p99_http:.2f} ms (HTTP); "
            f"a stranger refused on both ports")


def test_https_and_bare_answers_keep_haproxy_working(workdir, pg_cluster, agent_bin, haproxy_factory,
                                                     figures):
    """http_certfile/http_keyfile: the HTTP port speaks only TLS, and HAProxy's httpchk verifies it
    (check-ssl verify required); expose_reasons = false: both ports answer states without
    reasons, and /health shows no member, address or step. HAProxy routes as before."""
    leader = pg_cluster.wait_healthy()
    replicas = sorted(m.name for m in pg_cluster.replicas())
    ca = make_ca(workdir / "tls", "agent")
    cert = issue(ca, workdir / "tls", "agent", ["IP:127.0.0.1"])
    agents = start_pg_agents(workdir, pg_cluster, agent_bin, interval="1s", shutdown_grace="1s", allow=ALLOW,
                             cafile=ca.cert, http_certfile=str(cert.cert), http_keyfile=str(cert.key),
                             expose_reasons=False)
    try:
        a = next(x for x in agents if x.name == f"agent-{leader.name}")
        assert http_get(a.http_port, "/backend/pg_write", cafile=ca.cert) == (200, "pg_write UP\n")
        assert http_get(a.http_port, "/backend/pg_read", cafile=ca.cert) == (503, "pg_read DOWN\n")
        health = http_get(a.http_port, "/health", cafile=ca.cert)[1]
        assert json.loads(health)["backends"]["pg_write"]["state"] == "up", health
        assert "steps" not in health and leader.pg_addr not in health and "leader" not in health, health
        with pytest.raises(OSError):  # plain HTTP gets no page from the TLS port
            http_get(a.http_port, "/backend/pg_write")
        assert a.ask("pg_write") == "up 100%\n"
        assert a.ask("pg_read") == "down\n"  # the reason stays in the agent's log
        cfg, _ = render_agent_example(pg_cluster, agents, workdir / "haproxy" / "admin.sock")
        tls = f"check-ssl verify required ca-file {ca.cert}"
        cfg = cfg.replace("default-server inter 1s", f"default-server {tls} inter 1s")
        assert cfg.count("check-ssl") == 2, cfg
        hap = haproxy_factory(cfg)
        hap.wait_until_checked("pg_write", timeout=30)
        wait_until(lambda: hap.servers_up("pg_write") == [leader.name], 30, f"{leader.name} alone UP (TLS)")
        wait_until(lambda: sorted(hap.servers_up("pg_read")) == replicas, 30, "both replicas UP over TLS")
        layer = {r["svname"]: r["check_status"] for r in hap.servers("pg_write")}
        assert layer[leader.name] == "L7OK", layer
    finally:
        stop_agents(agents)
    figures("agent over HTTPS, reasons hidden",
            f"HAProxy's httpchk with check-ssl verify required: {leader.name} the only writer ({layer}); "
            "agent port answers 'up 100%' / 'down' without reasons; /health shows states only")
