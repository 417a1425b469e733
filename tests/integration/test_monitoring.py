"""The shipped monitoring (monitoring/): the alert rules pass promtool's check and their unit
tests; a real Prometheus scrapes real agents in front of a real Patroni cluster, its queries
return the series the rules and the dashboard are written against, every dashboard query runs,
and no rule fires for a healthy cluster."""

import json
import re
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from lab.agent import http_get, start_pg_agents, start_redis_agents, stop_agents
from lab.ports import free_ports
from lab.procs import start_daemon, wait_until

MONITORING = Path(__file__).resolve().parents[2] / "monitoring"
RULES = MONITORING / "dbcheck-alerts.yml"
DASHBOARD = MONITORING / "dbcheck-dashboard.json"


def _promtool(*args):
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=120, cwd=MONITORING)


def test_rules_pass_promtool_check_and_their_unit_tests():
    res = _promtool("check", "rules", str(RULES))
    assert res.returncode == 0 and "SUCCESS: 9 rules found" in res.stdout, res.stdout + res.stderr
    res = _promtool("test", "rules", "dbcheck-alerts.test.yml")
    assert res.returncode == 0 and "SUCCESS" in res.stdout, res.stdout + res.stderr


def _query(port, expr):
    """The result list of an instant PromQL query; AssertionError when Prometheus refuses it."""
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=5) as r:
            doc = json.load(r)
    except urllib.error.HTTPError as e:
        raise AssertionError(f"{expr}: {e.code} {e.read()[:300]!r}") from e
    assert doc["status"] == "success", (expr, doc)
    return doc["data"]["result"]


@pytest.fixture
def prometheus(workdir, pg_cluster, agent_bin):
    """Agents for pg_cluster's members and a Prometheus scraping their /metrics every second
    with the shipped rules loaded. Yields (port, agents, leader, the replicas' addresses)."""
    leader = pg_cluster.wait_healthy()
    agents = start_pg_agents(workdir, pg_cluster, agent_bin, interval="1s")
    (port,) = free_ports(1)
    cfg = workdir / "prometheus.yml"
    targets = ", ".join(f'"{a.ip}:{a.http_port}"' for a in agents)
    cfg.write_text(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - {RULES}
scrape_configs:
  - job_name: dbcheck-agent
    static_configs:
      - targets: [{targets}]
""")
    data = workdir / "prometheus-data"
    data.mkdir()
    daemon = start_daemon("prometheus", ["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={data}",
                                         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                          workdir / "prometheus.log")
    try:
        wait_until(lambda: len(_query(port, 'up{job="dbcheck-agent"} == 1')) == len(agents), 60,
                   "Prometheus scraping every agent", daemons=[daemon])
        yield port, agents, leader, sorted(m.pg_addr for m in pg_cluster.replicas())
    finally:
        daemon.stop()
        stop_agents(agents)


def test_prometheus_scrapes_the_agents_and_the_rules_and_dashboard_hold(prometheus, figures):
    port, agents, leader, replicas = prometheus
    # The series the rules are written against, with the labels they use: one writer, the leader.
    wait_until(lambda: len(_query(port, 'dbcheck_backend_up{role="primary"}')) == len(agents), 30,
               "every agent's pg_write series")
    wait_until(lambda: [r["metric"]["node"] for r in _query(port, 'dbcheck_backend_up{role="primary"} == 1')]
               == [leader.pg_addr], 30, f"{leader.name}'s agent the only writer")
    by_backend = 'sum by (cluster, backend) (dbcheck_backend_up{role="primary"})'
    wait_until(lambda: [(r["metric"], r["value"][1]) for r in _query(port, by_backend)]
               == [({"backend": "pg_write", "cluster": "pg"}, "1")], 30,
               "one writer in pg_write of cluster pg, summed over the agents")
    writers = _query(port, by_backend)
    readers = _query(port, 'dbcheck_backend_up{role="replica"} == 1')
    assert sorted(r["metric"]["node"] for r in readers) == replicas, readers
    assert _query(port, "dbcheck_verdict_age_seconds < 3"), "fresh verdicts"
    # Every dashboard query is valid PromQL against this Prometheus, and the ones that must have
    # data here do.
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    results = {e: _query(port, e) for e in exprs}
    for must in ('sum by (cluster, backend) (dbcheck_backend_up{role="primary"})', "dbcheck_backend_up",
                 "dbcheck_verdict_age_seconds", "dbcheck_agent_draining"):
        assert results[must], must
    # A healthy cluster: the rules loaded, none firing, and the writer rules not even pending.
    # (On a loaded machine a probe round may time out: DbcheckProbeErrors may be pending, which
    # is right; it fires only after 5 minutes of them.)
    groups = _get(port, "/api/v1/rules")["data"]["groups"]
    assert [len(g["rules"]) for g in groups] == [9], groups
    # The writer rules may go pending for an evaluation that ran before the leader's agent was
    # first scraped (at that instant no agent reported a writer): they must clear, bounded.
    writer_rules = ("DbcheckNoWriter", "DbcheckTwoWriters", "DbcheckAgentNotScraped")
    wait_until(lambda: not [a for a in _get(port, "/api/v1/alerts")["data"]["alerts"]
                            if a["labels"]["alertname"] in writer_rules], 20, "no writer rule pending")
    alerts = _get(port, "/api/v1/alerts")["data"]["alerts"]
    assert not [a for a in alerts if a["state"] == "firing"], alerts
    figures("monitoring", f"Prometheus scraped {len(agents)} agents; sum of writers "
            f"{writers[0]['value'][1]}; "
            f"{len(exprs)} dashboard queries ran ({sum(1 for r in results.values() if r)} with data); "
            f"9 rules loaded, none firing ({len(alerts)} pending)")


def _get(port, path):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return json.load(r)


def test_redis_agents_export_the_sentinels_votes(redis_cluster, agent_bin, workdir):
    """dbcheck_manager_votes, which DbcheckSentinelDisagreement reads, from real Sentinels: the
    master's agent has all three naming its node, the replica's none."""
    master = redis_cluster.master()
    agents = start_redis_agents(workdir, redis_cluster, agent_bin, interval="1s")
    try:
        votes = {}
        for a in agents:
            text = http_get(a.http_port, "/metrics")[1]
            pattern = r'^dbcheck_manager_votes\{backend="redis_write",cluster="cache",vote="(\w+)"\} (\d+)$'
            votes[a.name] = {v: int(n) for v, n in re.findall(pattern, text, re.M)}
        mine = next(a.name for a in agents if a.name == f"agent-{master.name}")
        assert votes[mine] == {"this": 3, "other": 0, "none": 0}, votes
        others = [v for name, v in votes.items() if name != mine]
        assert others and all(v == {"this": 0, "other": 3, "none": 0} for v in others), votes
    finally:
        stop_agents(agents)
