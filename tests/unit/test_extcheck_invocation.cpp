#include "dbcheck_catch.hpp"
#include "invocation.hpp"

using namespace dbcheck::extcheck;

namespace {
// The environment HAProxy 2.6 gives an external check (HAProxy 2.6 configuration.txt,
// "external-check command").
Env haproxy_env() {
  return {{"PATH", "/usr/bin:/bin"},       {"HAPROXY_PROXY_NAME", "pg_write"},
          {"HAPROXY_PROXY_ID", "3"},       {"HAPROXY_PROXY_ADDR", ""},
          {"HAPROXY_PROXY_PORT", ""},      {"HAPROXY_SERVER_NAME", "pg1"},
          {"HAPROXY_SERVER_ID", "1"},      {"HAPROXY_SERVER_ADDR", "10.0.0.1"},
          {"HAPROXY_SERVER_PORT", "5432"}, {"HAPROXY_SERVER_MAXCONN", "0"},
          {"HAPROXY_SERVER_CURCONN", "0"}, {"HAPROXY_SERVER_SSL", "0"},
          {"HAPROXY_SERVER_PROTO", "tcp"}};
}
} // namespace

TEST_CASE("HAProxy's argv and environment name the backend and node", "[extcheck]") {
  const auto t = haproxy_target({"NOT_USED", "NOT_USED", "10.0.0.1", "5432"}, haproxy_env());
  REQUIRE(t);
  CHECK(t->backend == "pg_write");
  CHECK(t->node == dbcheck::util::HostPort{"10.0.0.1", 5432});
  // A listen section passes its bind address; the server is still argv 3 and 4.
  const auto l = haproxy_target({"127.0.0.1", "17001", "::1", "5433"}, haproxy_env());
  REQUIRE(l);
  CHECK(l->node == dbcheck::util::HostPort{"::1", 5433});
}

TEST_CASE("HAProxy invocation errors say what is wrong", "[extcheck]") {
  CHECK(haproxy_target({"a", "b", "c"}, haproxy_env()).error() ==
        "expected 4 arguments from HAProxy (<proxy_addr> <proxy_port> <server_addr> "
        "<server_port>), got 3; for manual use run: dbcheck check BACKEND HOST:PORT");
  Env no_name = haproxy_env();
  no_name.erase("HAPROXY_PROXY_NAME");
  CHECK(haproxy_target({"NOT_USED", "NOT_USED", "10.0.0.1", "5432"}, no_name).error() ==
        "HAPROXY_PROXY_NAME is not set: dbcheck was not started by HAProxy's external-check; "
        "for manual use run: dbcheck check BACKEND HOST:PORT");
  CHECK(
      haproxy_target({"NOT_USED", "NOT_USED", "/run/pg.sock", "NOT_USED"}, haproxy_env()).error() ==
      "server address \"/run/pg.sock\" is not an IP address (UNIX-socket "
      "servers are not supported)");
  CHECK(haproxy_target({"NOT_USED", "NOT_USED", "10.0.0.1", "x"}, haproxy_env()).error() ==
        "server port: \"x\" is not a port number (1-65535)");
}

TEST_CASE("the config path: --config, then DBCHECK_CONFIG, then /etc", "[extcheck]") {
  Env env = haproxy_env();
  CHECK(config_path(std::nullopt, env) == "/etc/dbcheck/dbcheck.toml");
  env["DBCHECK_CONFIG"] = "/srv/dbcheck.toml";
  CHECK(config_path(std::nullopt, env) == "/srv/dbcheck.toml");
  CHECK(config_path(std::string{"/x.toml"}, env) == "/x.toml");
}

TEST_CASE("manual targets parse HOST:PORT", "[extcheck]") {
  CHECK(manual_target("pg_read", "10.0.0.2:5432")->node.port == 5432);
  CHECK(manual_target("pg_read", "10.0.0.2").error() ==
        "\"10.0.0.2\" is not HOST:PORT (e.g. 10.0.0.1:5432 or [::1]:5432)");
}

TEST_CASE("env_from splits NAME=VALUE at the first '='", "[extcheck]") {
  char a[] = "A=1=2";
  char b[] = "EMPTY=";
  char* envp[] = {a, b, nullptr};
  const Env env = env_from(envp);
  CHECK(env.at("A") == "1=2");
  CHECK(env.at("EMPTY").empty());
}
