#include "dbcheck_catch.hpp"

#include <config/haproxy_cfg.hpp>

#include <map>
#include <string>

using namespace dbcheck::config;

namespace {

// An environment of exactly `vars`.
EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    const auto it = vars.find(std::string{name});
    return it != vars.end() ? std::optional<std::string>{it->second} : std::nullopt;
  };
}

HaproxyServers parse(const std::string& text, std::map<std::string, std::string> vars = {}) {
  auto r = parse_haproxy_cfg(text, "haproxy.cfg", env_of(std::move(vars)));
  REQUIRE(r);
  return *r;
}

} // namespace

TEST_CASE("haproxy_cfg: servers of backend and listen sections, with their check flag") {
  const auto r = parse(R"(global
    server-state-file /var/lib/haproxy/server-state   # a global keyword, not a server
frontend fe
    bind :5000
    default_backend pg_write
backend pg_write
    option external-check
    server pg1 10.0.0.1:5432 check port 8008 inter 1s
    server pg2 10.0.0.2:5432 weight 10    # no check
listen pg_read
    bind :5001
    server pg3 [2001:db8::3]:5433 check
    server pg4 ipv6@2001:db8::4:5434 check
    server pg5 db5.example check
)");
  REQUIRE(r.servers.size() == 5);
  CHECK(r.skipped.empty());
  const HaproxyServer& a = r.servers[0];
  CHECK((a.backend == "pg_write" && a.name == "pg1" && a.host == "10.0.0.1" && a.port == 5432));
  CHECK((a.checked && a.line == 8));
  CHECK((r.servers[1].name == "pg2" && !r.servers[1].checked));
  CHECK((r.servers[2].backend == "pg_read" && r.servers[2].host == "2001:db8::3" &&
         r.servers[2].port == 5433 && r.servers[2].checked));
  CHECK((r.servers[3].host == "2001:db8::4" && r.servers[3].port == 5434));
  CHECK((r.servers[4].host == "db5.example" && !r.servers[4].port));
  CHECK(r.state_file == "/var/lib/haproxy/server-state");
}

TEST_CASE("haproxy_cfg: the server-state file, joined to its base as HAProxy does") {
  CHECK(parse("global\n  server-state-base /run/haproxy\n  server-state-file state\n").state_file ==
        "/run/haproxy/state");
  CHECK(parse("global\n  server-state-base /run/haproxy/\n  server-state-file /abs\n").state_file ==
        "/abs");
  CHECK(parse("global\n  server-state-file state\n").state_file == "state");
  CHECK(parse("defaults\n  server-state-file-name x\nbackend b\n").state_file.empty());
}

TEST_CASE("haproxy_cfg: words as HAProxy splits them") {
  SECTION("quotes, escapes and comments") {
    const auto r = parse("backend b\n  server \"pg 1\" '10.0.0.1:5432' check\\#not-a-comment # c\n"
                         "  server pg2 10.0.0.2:5432 #check\n");
    REQUIRE(r.servers.size() == 2);
    CHECK(r.servers[0].name == "pg 1");
    CHECK(r.servers[0].host == "10.0.0.1");
    CHECK(!r.servers[0].checked); // "check#not-a-comment" is one word
    CHECK(!r.servers[1].checked); // commented out
  }
  SECTION("${NAME} inside double quotes only") {
    const auto r =
        parse("backend b\n  server pg1 \"${PG1}:5432\" check\n  server pg2 '${PG1}:5432' check\n",
              {{"PG1", "10.0.0.9"}});
    REQUIRE(r.servers.size() == 2);
    CHECK(r.servers[0].host == "10.0.0.9");
    CHECK(r.servers[1].host == "${PG1}");
  }
  SECTION("an unset variable skips that server, naming it") {
    const auto r = parse("backend b\n  server pg1 \"${NOPE}:5432\" check\n");
    CHECK(r.servers.empty());
    REQUIRE(r.skipped.size() == 1);
    CHECK(r.skipped[0] == "haproxy.cfg:2: server b/pg1: ${NOPE} is not set");
  }
  SECTION("an unterminated quote is an error naming the line") {
    auto r =
        parse_haproxy_cfg("backend b\n\n  server pg1 \"10.0.0.1:5432 check\n", "h.cfg", env_of({}));
    REQUIRE(!r);
    CHECK(r.error() == "h.cfg:3: an unterminated double quote");
  }
}

TEST_CASE("haproxy_cfg: what cannot be started from a state file is listed, not guessed") {
  const auto r = parse("backend b\n"
                       "  server-template pg 3 db.example:5432 check\n"
                       "  server sock unix@/run/pg.sock check\n"
                       "  server mapped 10.0.0.1:+1 check\n"
                       "  server\n");
  REQUIRE(r.servers.size() == 1);
  CHECK((r.servers[0].name == "mapped" && !r.servers[0].port)); // listed; the caller skips it
  REQUIRE(r.skipped.size() == 3);
  CHECK(r.skipped[0].find("haproxy.cfg:2: server-template in b") == 0);
  CHECK(r.skipped[1] ==
        "haproxy.cfg:3: server b/sock: address unix@/run/pg.sock: not an IP address");
  CHECK(r.skipped[2] == "haproxy.cfg:5: a server line without a name and address");
}

TEST_CASE("haproxy_cfg: a missing file is an error naming it") {
  auto r = load_haproxy_cfg("/nonexistent/haproxy.cfg");
  REQUIRE(!r);
  CHECK(r.error() == "/nonexistent/haproxy.cfg: cannot open the HAProxy configuration");
}
