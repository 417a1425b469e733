// The [agent] and [log] sections: their defaults, every key, what they must refer to, and how
// agent.fastinter follows agent.interval.
#include "config_load_fixtures.hpp"
#include "dbcheck_catch.hpp"
#include "temp_dir.hpp"

#include <config/load_config.hpp>

#include <optional>
#include <string>

using namespace dbcheck::config;
using namespace dbcheck::testing::config_load;
using dbcheck::testing::TempDir;

namespace {

// The keys every [agent] section must state.
const std::string k_agent_ports =
    "listen = \"127.0.0.1:5555\"\nhttp_listen = \"127.0.0.1:8091\"\nallow = [\"127.0.0.1\"]\n";

} // namespace

TEST_CASE("agent.fastinter: follows a short interval, bounded by a quarter of it",
          "[config][agent]") {
  TempDir dir;
  const auto pw = dir.write("pg.password", "s3cret\n", 0600);
  const std::string base = valid_config(pw) + "\n[agent]\n" + k_agent_ports;
  // Unset: 250 ms, or the interval itself when that is shorter (a valid config stays valid).
  const auto short_interval =
      parse_config(base + "interval = \"200ms\"\nstale_after = \"1s\"\n", "dbcheck.toml");
  REQUIRE(short_interval);
  CHECK(short_interval->agent->fastinter.count() == 200);
  CHECK(parse_config(base, "dbcheck.toml")->agent->fastinter.count() == 250);
  const auto too_fast = parse_config(base + "fastinter = \"100ms\"\n", "dbcheck.toml");
  REQUIRE_FALSE(too_fast);
  CHECK(errors_of(too_fast).find("agent.fastinter: must be at least a quarter of agent.interval") !=
        std::string::npos);
  const auto quarter = parse_config(base + "fastinter = \"250ms\"\n", "dbcheck.toml");
  REQUIRE(quarter);
  CHECK(quarter->agent->fastinter.count() == 250);
}

TEST_CASE("the [agent] section: defaults, values and references", "[config][agent]") {
  TempDir dir;
  const auto pw = dir.write("pg.password", "s3cret\n", 0600);
  const std::string base = valid_config(pw);
  SECTION("absent: no agent settings") {
    CHECK_FALSE(parse_config(base, "dbcheck.toml")->agent);
  }
  SECTION("every key") {
    const auto cfg = parse_config(base + R"(
[agent]
listen = "127.0.0.1:5555"
http_listen = "127.0.0.1:8091"
allow = ["10.0.0.10", "10.0.1.0/24", "::1"]
expose_reasons = false
interval = "1s"
fastinter = "300ms"
fall = 3
rise = 4
lag_window = "10s"
stale_after = "2s"
shutdown_grace = "3s"
ready_window = "5s"
drain_file = "/etc/dbcheck/drain"
default_backend = "pg_write"
max_connections = 500

[agent.local]
pg = "10.0.0.1:5432"
)",
                                  "dbcheck.toml");
    REQUIRE(cfg);
    const AgentSettings& a = *cfg->agent;
    CHECK(a.listen == dbcheck::util::HostPort{"127.0.0.1", 5555});
    REQUIRE(a.allow.size() == 3);
    CHECK(dbcheck::util::to_string(a.allow[1]) == "10.0.1.0/24");
    CHECK_FALSE(a.expose_reasons);
    CHECK(a.interval.count() == 1000);
    CHECK(a.fastinter.count() == 300);
    CHECK(a.fall == 3);
    CHECK(a.rise == 4);
    CHECK(a.lag_window.count() == 10000);
    CHECK(a.drain_file == std::optional<std::string>{"/etc/dbcheck/drain"});
    CHECK(a.default_backend == std::optional<std::string>{"pg_write"});
    CHECK(a.max_connections == 500);
    CHECK(a.local.at("pg") == dbcheck::util::HostPort{"10.0.0.1", 5432});
  }
  SECTION("errors") {
    const auto r = parse_config(base + R"(
[agent]
fall = 0
interval = "5s"
fastinter = "6s"
default_backend = "nope"
listen = "5555"
allow = ["10.0.0.1/24", 7]
expose_reasons = "no"
http_certfile = "/etc/dbcheck/agent.crt"

[agent.local]
cache = "10.0.0.1:6379"
)",
                                "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) ==
          "dbcheck.toml: agent.local.cache: no [cluster.cache] is defined\n"
          "dbcheck.toml: agent.default_backend: no [backend.nope] is defined\n"
          "dbcheck.toml:20: agent.http_listen: is required, e.g. \"10.0.0.1:8091\"\n"
          "dbcheck.toml:20: agent.http_keyfile: agent.http_certfile and agent.http_keyfile go "
          "together (HTTPS needs both)\n"
          "dbcheck.toml:20: agent.fastinter: must not be longer than agent.interval\n"
          "dbcheck.toml:20: agent.stale_after: must be at least twice agent.interval\n"
          "dbcheck.toml:21: agent.fall: expected a whole number from 1 to 100\n"
          "dbcheck.toml:25: agent.listen: \"5555\" is not HOST:PORT (e.g. 10.0.0.1:5432 or "
          "[::1]:5432)\n"
          "dbcheck.toml:26: agent.allow: \"10.0.0.1/24\": host bits are set below /24 (did you "
          "mean 10.0.0.0/24?)\n"
          "dbcheck.toml:26: agent.allow: expected a string, got an integer\n"
          "dbcheck.toml:27: agent.expose_reasons: expected true or false, got a string\n");
  }
}

TEST_CASE("[log]: passes logged on change by default, a heartbeat, a private directory",
          "[config][log]") {
  TempDir dir;
  const auto pw = dir.write("pg.password", "s3cret\n", 0600);
  const auto with = [&](const std::string& lines) {
    return parse_config(valid_config(pw) + "\n[log]\n" + lines, "dbcheck.toml");
  };
  const auto plain = parse_config(valid_config(pw), "dbcheck.toml");
  REQUIRE(plain);
  CHECK(plain->log.passes == dbcheck::core::PassLogging::changes);
  CHECK(plain->log.pass_heartbeat == dbcheck::util::Duration{3'600'000});
  CHECK_FALSE(plain->log.state_dir);

  const auto set = with("passes = \"all\"\npass_heartbeat = \"10m\"\nstate_dir = \"/run/x\"\n");
  REQUIRE(set);
  CHECK(set->log.passes == dbcheck::core::PassLogging::all);
  CHECK(set->log.pass_heartbeat == dbcheck::util::Duration{600'000});
  CHECK(set->log.state_dir == std::optional<std::string>{"/run/x"});

  const auto bad = with("passes = \"some\"\npass_heartbeat = \"0s\"\nstate_dir = \"x\"\n");
  REQUIRE_FALSE(bad);
  CHECK(errors_of(bad) ==
        "dbcheck.toml:21: log.passes: \"some\" is not one of \"changes\", \"all\"\n"
        "dbcheck.toml:22: log.pass_heartbeat: \"0s\" must be longer than 0ms\n"
        "dbcheck.toml:23: log.state_dir: \"x\" is not an absolute path\n");
}
