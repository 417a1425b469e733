#include "dbcheck_catch.hpp"

#include <config/haproxy_match.hpp>
#include <config/load_config.hpp>

#include <string>

using namespace dbcheck::config;
using dbcheck::util::Duration;

namespace {

Config toml(const std::string& text) {
  auto r = parse_config(text, "dbcheck.toml");
  if (!r) {
    FAIL(r.error().messages.front());
  }
  return *r;
}

HaproxyServers haproxy(const std::string& text) {
  auto r = parse_haproxy_cfg(text, "haproxy.cfg",
                             [](std::string_view) -> std::optional<std::string> { return {}; });
  REQUIRE(r);
  return *r;
}

// Line numbers below are counted from these texts: keep them in step.
const std::string k_toml = R"([defaults]
timeout = "800ms"

[cluster.pg]
engine = "postgres"
patroni = ["http://10.0.0.1:8008"]
dbname = "appdb"
user = "healthcheck"
shared_view_max_age = "500ms"

[backend.pg_write]
cluster = "pg"
role = "primary"

[backend.pg_read]
cluster = "pg"
role = "replica"
)";

const std::string k_haproxy = R"(global
    external-check
defaults
    mode tcp
    timeout connect 1s
    timeout check 1s
    option external-check
    external-check command /usr/bin/dbcheck
backend pg_write
    default-server inter 1s fall 2 rise 3
    server pg1 10.0.0.1:5432 check
    server pg2 10.0.0.2:5432 check
backend pg_read
    default-server inter 1s
    server pg1 10.0.0.1:5432 check
)";

// `text` with the first `from` replaced by `to` (which must be there).
std::string with(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

} // namespace

TEST_CASE("haproxy_match: the files agree: no finding") {
  const auto cfg = toml(k_toml);
  const auto h = haproxy(k_haproxy);
  CHECK(compare_with_haproxy(cfg, h, "haproxy.cfg").empty());
  const auto servers = dbcheck_servers(cfg, h);
  REQUIRE(servers.size() == 3);
  CHECK(servers[0].asks == "pg_write");
  CHECK(servers[0].kind == CheckKind::external);
  CHECK(servers[2].asks == "pg_read");
}

TEST_CASE("haproxy_match: a misnamed backend is reported from both sides, each naming the other") {
  const auto cfg = toml(k_toml);
  const auto h = haproxy(with(k_haproxy, "backend pg_write", "backend pg_wirte"));
  const auto f = compare_with_haproxy(cfg, h, "haproxy.cfg");
  REQUIRE(f.size() == 2);
  CHECK(f[0] == "haproxy.cfg:9: backend pg_wirte runs dbcheck (external-check command "
                "/usr/bin/dbcheck, line 8) but dbcheck.toml has no [backend.pg_wirte] (did you "
                "mean pg_write, dbcheck.toml:11?): every check of it fails as a configuration "
                "error");
  CHECK(f[1] == "dbcheck.toml:11: [backend.pg_write] is used by no HAProxy backend in "
                "haproxy.cfg (did you mean pg_wirte, haproxy.cfg:9?)");
}

TEST_CASE("haproxy_match: no hint when no name is near") {
  const auto cfg = toml(k_toml);
  const auto h = haproxy(with(k_haproxy, "backend pg_read", "backend analytics"));
  const auto f = compare_with_haproxy(cfg, h, "haproxy.cfg");
  REQUIRE(f.size() == 2);
  CHECK(f[0].find("has no [backend.analytics]: every check") != std::string::npos);
  CHECK(f[1] == "dbcheck.toml:15: [backend.pg_read] is used by no HAProxy backend in haproxy.cfg");
}

TEST_CASE("haproxy_match: a [backend.NAME] whose HAProxy backend runs another check") {
  const auto cfg = toml(k_toml);
  const auto h = haproxy(
      with(k_haproxy, "backend pg_read\n", "backend pg_read\n    no option external-check\n"));
  const auto f = compare_with_haproxy(cfg, h, "haproxy.cfg");
  REQUIRE(f.size() == 1);
  CHECK(f[0].rfind("dbcheck.toml:15: [backend.pg_read]: HAProxy's backend pg_read "
                   "(haproxy.cfg:13) does not run dbcheck",
                   0) == 0);
}

TEST_CASE("haproxy_match: timeout not below HAProxy's kill time, with both lines") {
  SECTION("no `timeout check`: inter kills; equal is already too long") {
    const auto cfg = toml(with(k_toml, "timeout = \"800ms\"", "timeout = \"1s\""));
    auto text = with(k_haproxy, "    timeout check 1s\n", "");
    const auto f = compare_with_haproxy(cfg, haproxy(text), "haproxy.cfg");
    REQUIRE(f.size() == 2);
    CHECK(f[0] == "haproxy.cfg:9: backend pg_write: HAProxy kills the check after 1s (inter 1s) "
                  "but dbcheck's timeout is 1s (dbcheck.toml:2): a slow check is killed and "
                  "counted failed without its reason; make timeout shorter than 1s");
    CHECK(f[1].rfind("haproxy.cfg:13: backend pg_read: HAProxy kills the check after 1s", 0) == 0);
  }
  SECTION("`timeout check` set: a shorter timeout connect kills, and its line is named") {
    const auto cfg = toml(k_toml);
    const auto h = haproxy(with(k_haproxy, "timeout connect 1s", "timeout connect 500ms"));
    const auto f = compare_with_haproxy(cfg, h, "haproxy.cfg");
    REQUIRE(f.size() == 2);
    CHECK(f[0] == "haproxy.cfg:5: backend pg_write: HAProxy kills the check after 500ms (min(inter "
                  "1s, timeout connect 500ms), as `timeout check` is set at haproxy.cfg:6) but "
                  "dbcheck's timeout is 800ms (dbcheck.toml:2): a slow check is killed and "
                  "counted failed without its reason; make timeout shorter than 500ms");
  }
  SECTION("a backend's own timeout, and one server's inter, decide") {
    const auto cfg =
        toml(with(k_toml, "role = \"replica\"", "role = \"replica\"\ntimeout = \"900ms\""));
    const auto h = haproxy(k_haproxy + "    server pg2 10.0.0.2:5432 check inter 900ms\n");
    REQUIRE(h.servers.back().inter == Duration{900});
    const auto f = compare_with_haproxy(cfg, h, "haproxy.cfg");
    REQUIRE(f.size() == 1);
    CHECK(f[0].rfind("haproxy.cfg:16: backend pg_read: HAProxy kills the check after 900ms "
                     "(min(inter 900ms, timeout connect 1s)",
                     0) == 0);
    CHECK(f[0].find("dbcheck's timeout is 900ms (dbcheck.toml:18)") != std::string::npos);
  }
  SECTION("HAProxy's default inter and dbcheck's default timeout are named as such") {
    const auto cfg = toml(with(k_toml, "timeout = \"800ms\"", "max_lag = \"1s\""));
    const auto h = haproxy(with(with(k_haproxy, "    default-server inter 1s fall 2 rise 3\n", ""),
                                "timeout connect 1s", "timeout connect 500ms"));
    const auto f = compare_with_haproxy(cfg, h, "haproxy.cfg");
    REQUIRE(f.size() == 2);
    CHECK(f[0].find("dbcheck's timeout is 800ms (dbcheck.toml, the default)") != std::string::npos);
  }
}

TEST_CASE("haproxy_match: shared_view_max_age longer than inter") {
  const auto cfg = toml(with(k_toml, "timeout = \"800ms\"", "timeout = \"300ms\""));
  const auto h =
      haproxy(with(k_haproxy, "default-server inter 1s fall", "default-server inter 400ms fall"));
  const auto f = compare_with_haproxy(cfg, h, "haproxy.cfg");
  REQUIRE(f.size() == 1);
  CHECK(f[0] == "dbcheck.toml:9: cluster.pg.shared_view_max_age 500ms is longer than inter 400ms "
                "of backend pg_write (haproxy.cfg:10): a check could reuse the members' view of an "
                "earlier round of checks, and a new leader would be seen that much later; keep it "
                "at most inter, or \"auto\"");
}

TEST_CASE("haproxy_match: the default shared_view_max_age follows inter, whatever it is") {
  const auto cfg = toml(with(with(k_toml, "timeout = \"800ms\"", "timeout = \"150ms\""),
                             "shared_view_max_age = \"500ms\"\n", ""));
  const auto h =
      haproxy(with(k_haproxy, "default-server inter 1s fall", "default-server inter 200ms fall"));
  CHECK(compare_with_haproxy(cfg, h, "haproxy.cfg").empty());
  const auto said = toml(with(with(k_toml, "timeout = \"800ms\"", "timeout = \"150ms\""),
                              "shared_view_max_age = \"500ms\"", "shared_view_max_age = \"auto\""));
  CHECK(compare_with_haproxy(said, h, "haproxy.cfg").empty());
}

TEST_CASE("haproxy_match: a wrapper named after dbcheck runs it; dbcheck-agent does not") {
  const auto cfg = toml(k_toml);
  const auto wrapped = haproxy(with(k_haproxy, "/usr/bin/dbcheck", "/etc/haproxy/dbcheck-pg.sh"));
  CHECK(compare_with_haproxy(cfg, wrapped, "haproxy.cfg").empty());
  const auto agent = haproxy(with(k_haproxy, "/usr/bin/dbcheck", "/usr/sbin/dbcheck-agent"));
  CHECK(compare_with_haproxy(cfg, agent, "haproxy.cfg").size() == 2);
}

TEST_CASE("haproxy_match: a dbcheck backend's server without `check`") {
  const auto cfg = toml(k_toml);
  const auto h = haproxy(with(k_haproxy, "10.0.0.2:5432 check", "10.0.0.2:5432"));
  const auto f = compare_with_haproxy(cfg, h, "haproxy.cfg");
  REQUIRE(f.size() == 1);
  CHECK(f[0] == "haproxy.cfg:12: server pg_write/pg2 has no `check`: HAProxy never runs dbcheck "
                "for it and keeps it UP whatever its role");
  CHECK(dbcheck_servers(cfg, h).size() == 2);
}

TEST_CASE("haproxy_match: agent-check servers ask for their agent-send name") {
  const std::string agent_toml = k_toml + R"(
[agent]
listen = "10.0.0.1:5555"
http_listen = "10.0.0.1:8091"
allow = ["10.0.0.10"]
)";
  const std::string agent_cfg = R"(defaults
    timeout connect 1s
backend pg_write
    default-server inter 1s agent-check agent-inter 250ms
    server pg1 10.0.0.1:5432 check port 8091 agent-port 5555 agent-send "pg_write\n"
backend pg_read
    server pg1 10.0.0.1:5432 check agent-check agent-port 5555 agent-send "pg_raed\n"
)";
  SECTION("a typo in agent-send") {
    const auto f = compare_with_haproxy(toml(agent_toml), haproxy(agent_cfg), "haproxy.cfg");
    REQUIRE(f.size() == 2);
    CHECK(f[0] == "haproxy.cfg:7: server pg_read/pg1 asks dbcheck-agent for pg_raed (agent-send) "
                  "but dbcheck.toml has no [backend.pg_raed] (did you mean pg_read, "
                  "dbcheck.toml:15?): the agent answers it down");
    CHECK(f[1] == "dbcheck.toml:15: [backend.pg_read]: no server asks for it, but HAProxy's "
                  "backend pg_read (haproxy.cfg:6) asks for pg_raed");
  }
  SECTION("without agent-send: default_backend, else a finding") {
    const std::string cfg_text = with(agent_cfg, " agent-send \"pg_raed\\n\"", "");
    const auto none = compare_with_haproxy(toml(agent_toml), haproxy(cfg_text), "haproxy.cfg");
    REQUIRE(none.size() == 2);
    CHECK(none[0].find("agent-check without agent-send") != std::string::npos);
    const auto with_default = toml(agent_toml + "default_backend = \"pg_read\"\n");
    CHECK(compare_with_haproxy(with_default, haproxy(cfg_text), "haproxy.cfg").empty());
  }
  SECTION("without [agent] in dbcheck.toml, only an agent-send naming a backend counts") {
    const auto f = compare_with_haproxy(toml(k_toml), haproxy(agent_cfg), "haproxy.cfg");
    REQUIRE(f.size() == 1);
    CHECK(f[0].rfind("dbcheck.toml:15: [backend.pg_read]: HAProxy's backend pg_read "
                     "(haproxy.cfg:6) does not run dbcheck",
                     0) == 0);
    CHECK(dbcheck_servers(toml(k_toml), haproxy(agent_cfg)).size() == 1);
  }
}

TEST_CASE("haproxy_match: the kill time HAProxy gives an external check") {
  HaproxyBackend b;
  HaproxyServer s;
  s.inter = Duration{2000};
  CHECK(external_check_kill_time(b, s) == Duration{2000});
  b.timeout_connect = Duration{500};
  CHECK(external_check_kill_time(b, s) == Duration{2000}); // no `timeout check`: inter
  b.timeout_check = Duration{100};                         // its value is not used
  CHECK(external_check_kill_time(b, s) == Duration{500});
  s.inter = Duration{300};
  CHECK(external_check_kill_time(b, s) == Duration{300});
}

TEST_CASE("haproxy_cfg: check settings of backends, from the defaults before them") {
  const auto h = haproxy(R"(defaults
    option external-check
    external-check command /usr/bin/dbcheck
    timeout check 2s
    default-server inter 3s
backend a
    server s1 10.0.0.1:1 check
defaults
    timeout connect 4s
backend b
    external-check command /opt/x/dbcheck
    option external-check
    default-server inter 500ms
    server s2 10.0.0.2:2 check inter 1500ms
    server s3 10.0.0.3:3 check
listen c
    no option external-check
)");
  REQUIRE(h.backends.size() == 3);
  CHECK(h.backends[0].name == "a");
  CHECK(h.backends[0].line == 6);
  CHECK(h.backends[0].external_check);
  CHECK(h.backends[0].command == "/usr/bin/dbcheck");
  CHECK(h.backends[0].command_line == 3);
  CHECK(h.backends[0].timeout_check == Duration{2000});
  CHECK(!h.backends[0].timeout_connect);
  // A new defaults section starts afresh.
  CHECK(h.backends[1].command == "/opt/x/dbcheck");
  CHECK(h.backends[1].external_check_line == 12);
  CHECK(!h.backends[1].timeout_check);
  CHECK(h.backends[1].timeout_connect == Duration{4000});
  CHECK(h.backends[1].timeout_connect_line == 9);
  CHECK_FALSE(h.backends[2].external_check);
  REQUIRE(h.servers.size() == 3);
  CHECK(h.servers[0].inter == Duration{3000});
  CHECK(h.servers[0].inter_line == 5);
  CHECK(h.servers[1].inter == Duration{1500});
  CHECK(h.servers[1].inter_line == 14);
  CHECK(h.servers[2].inter == Duration{500});
  CHECK(h.servers[2].inter_line == 13);
}

TEST_CASE("haproxy_cfg: HAProxy's time format") {
  CHECK(parse_haproxy_time("250") == Duration{250});
  CHECK(parse_haproxy_time("250ms") == Duration{250});
  CHECK(parse_haproxy_time("2s") == Duration{2000});
  CHECK(parse_haproxy_time("1m") == Duration{60000});
  CHECK(parse_haproxy_time("1h") == Duration{3600000});
  CHECK(parse_haproxy_time("1d") == Duration{86400000});
  CHECK(parse_haproxy_time("1500us") == Duration{2});
  CHECK_FALSE(parse_haproxy_time(""));
  CHECK_FALSE(parse_haproxy_time("s"));
  CHECK_FALSE(parse_haproxy_time("1x"));
  CHECK_FALSE(parse_haproxy_time("1.5s"));
  CHECK_FALSE(parse_haproxy_time("-1s"));
  // Twelve digits of days would overflow: refused, not wrapped.
  CHECK_FALSE(parse_haproxy_time("999999999999d"));
  CHECK(parse_haproxy_time("999999999999ms") == Duration{999999999999});
}

TEST_CASE("load_config: the lines config-check cites") {
  const auto cfg =
      toml(with(k_toml, "role = \"replica\"", "role = \"replica\"\ntimeout = \"500ms\""));
  CHECK(cfg.backends.at("pg_write").line == 11);
  CHECK(cfg.backends.at("pg_write").timeout_line == 2);
  CHECK(cfg.backends.at("pg_read").line == 15);
  CHECK(cfg.backends.at("pg_read").timeout_line == 18);
  CHECK(std::get<PostgresCluster>(cfg.clusters.at("pg")).shared_view_max_age_line == 9);
}
