"""The reference documentation agrees with the code: every configuration key dbcheck.toml(5)
documents is accepted by the parser with its documented example value, every key the parser
knows is documented, and every metric and HTTP endpoint dbcheck-agent(8) lists is served by a
running agent (and nothing undocumented is)."""

import re
import subprocess
from pathlib import Path

from lab.agent import http_get, start_pg_agents

REPO = Path(__file__).resolve().parents[2]
MAN = REPO / "docs" / "man"
# The files that hold the configuration's key tables.
CONFIG_SECTIONS = [REPO / "common" / "config" / f for f in (
    "load_config.cpp", "cluster_section.cpp", "host_sections.cpp")]


def roff_text(s):
    """Plain text of a roff line: escapes undone, font requests dropped."""
    s = s.replace("\\(dq", '"').replace("\\-", "-").replace("\\e", "\\")
    return re.sub(r"\\f[BIRP]", "", s)


def documented_keys():
    """[(section heading, key, example value text)] from dbcheck.toml(5): every `.TP` entry
    (or `.TQ`, a second key under one entry) whose next line is `.B key = value`."""
    out, section, lines = [], None, (MAN / "dbcheck.toml.5").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(".SS "):
            section = roff_text(line[4:])
        elif line in (".TP", ".TQ") and i + 1 < len(lines) and lines[i + 1].startswith(".B "):
            m = re.fullmatch(r"([a-z_]+) = (.+)", roff_text(lines[i + 1][3:]))
            if m and section:
                out.append((section, m.group(1), m.group(2)))
    return out


def documented_names():
    """Every key dbcheck.toml(5) documents: those above, and those an entry lists by name
    after `.TQ` (`.BR key ", " key ...`: the same settings for another kind of link)."""
    names = {k for _, k, _ in documented_keys()}
    lines = (MAN / "dbcheck.toml.5").read_text().splitlines()
    for i, line in enumerate(lines[1:], 1):
        if lines[i - 1] == ".TQ" and line.startswith(".BR "):
            names |= set(re.findall(r"[a-z_]+", roff_text(line[4:])))
    return names


def parser_keys():
    """Every key name in the config room's key tables: a row is `{"name", handler}`, or a row
    maker named after what it stores (`store("name", ...)`, `secret_file(...)`, ...); the Redis
    TLS keys (`name("tls...")`, `file("tls...")`) come once plain and once prefixed sentinel_."""
    keys = set()
    for path in CONFIG_SECTIONS:
        text = path.read_text()
        # `{"key",` followed by its handler, never by another string (that would be a list of
        # allowed values, e.g. sslmode's).
        keys |= set(re.findall(r'^\s+(?:return )?\{"([a-z_]+)",(?!\s*")', text, re.M))
        keys |= set(re.findall(
            r'^\s+(?:store|pg_file|secret_file|read_elsewhere<\w+>)\("([a-z_]+)"', text, re.M))
        for base in re.findall(r'(?:\{name|^\s+file)\("([a-z_]+)"', text, re.M):
            keys |= {base, "sentinel_" + base}
    return keys


def test_every_parser_key_is_documented():
    documented = documented_names()
    missing = parser_keys() - documented - {"local"}  # [agent.local] is its own section
    assert parser_keys(), "no key table found in common/config/"
    assert not missing, f"keys the parser accepts but dbcheck.toml(5) does not document: {sorted(missing)}"


def test_every_documented_key_and_example_is_accepted(dbcheck_bin, tmp_path):
    sections = {}
    for section, key, value in documented_keys():
        sections.setdefault(section, []).append(f"{key} = {value}")
    assert len(sections) == 7, sorted(sections)

    # Example paths under /etc/dbcheck become real files (passwords must be 0600, a client key
    # must look like a PEM private key).
    def local(value):
        for path in re.findall(r'"(/etc/dbcheck/[^"]+)"', value):
            f = tmp_path / Path(path).name
            f.write_text("-----BEGIN PRIVATE KEY-----\n" if path.endswith(".key") else "example-secret\n")
            f.chmod(0o600)
            value = value.replace(path, str(f))
        return value.replace('"/var/lib/dbcheck-agent"', f'"{tmp_path}"')
    heading = {'[cluster.NAME] with engine = "postgres"': "[cluster.pg]",
               '[cluster.NAME] with engine = "redis"': "[cluster.cache]",
               "[backend.NAME]": "[backend.pg_write]",
               "[defaults]": "[defaults]", "[agent]": "[agent]", "[agent.local]": "[agent.local]",
               "[log]": "[log]"}
    text = ""
    for section, entries in sections.items():
        text += f"{heading[section]}\n" + "".join(
            local(e) + "\n" for e in entries
            if not (section == "[backend.NAME]" and e.startswith(("max_lag", "readers")))) + "\n"
    # max_lag and readers are for replicas only (and on_saturation for writers): a second
    # backend has them.
    reader = [e for e in sections["[backend.NAME]"] if not e.startswith(("on_saturation", "role"))]
    assert any(e.startswith("max_lag") for e in reader)
    text += "[backend.pg_read]\nrole = \"replica\"\n" + "".join(e + "\n" for e in reader)
    # source_cluster names another PostgreSQL section of the file: the example's.
    assert 'source_cluster = "main"' in text
    text += '\n[cluster.main]\nengine = "postgres"\npatroni = ["https://10.0.0.1:8008"]\n' \
            'dbname = "app"\nuser = "healthcheck"\n'
    cfg = tmp_path / "documented.toml"
    cfg.write_text(text)
    res = subprocess.run([str(dbcheck_bin), "--config", str(cfg), "config-check"], capture_output=True,
                         text=True, timeout=10)
    assert res.returncode == 0, f"{res.stdout}{res.stderr}\n--- the documented keys as a config:\n{text}"


def man_metrics():
    text = roff_text((MAN / "dbcheck-agent.8").read_text())
    return set(re.findall(r"\b(dbcheck_[a-z_]+)\b", text))


def test_agent_serves_exactly_the_documented_metrics_and_endpoints(pg_cluster, agent_bin, workdir):
    pg_cluster.wait_healthy()
    agents = start_pg_agents(workdir / "agents", pg_cluster, agent_bin)
    agent = agents[0]
    try:
        status, body = http_get(agent.http_port, "/metrics")
        assert status == 200
        exported = set(re.findall(r"^# TYPE (dbcheck_[a-z_]+) ", body, re.M))
        documented = man_metrics()
        assert exported == documented, (
            f"exported, not in dbcheck-agent(8): {sorted(exported - documented)}; "
            f"documented, not exported: {sorted(documented - exported)}")
        agent_md = (REPO / "docs" / "agent.md").read_text()
        assert not [m for m in exported if m not in agent_md], "docs/agent.md misses a metric"
        assert http_get(agent.http_port, "/live")[0] == 200
        assert http_get(agent.http_port, "/health")[0] == 200
        assert http_get(agent.http_port, "/backend/pg_write")[0] in (200, 503)
        assert http_get(agent.http_port, "/backend/no_such_backend")[0] == 404
        assert http_get(agent.http_port, "/undocumented")[0] == 404
    finally:
        for a in agents:
            a.stop()
