#include "dbcheck_catch.hpp"

#include <util/host_port.hpp>

using namespace dbcheck::util;

TEST_CASE("parse_host_port reads IPv4, names and bracketed IPv6", "[util][host_port]") {
  CHECK(parse_host_port("10.0.0.1:5432").value() == HostPort{"10.0.0.1", 5432});
  CHECK(parse_host_port("db1.example:6379").value() == HostPort{"db1.example", 6379});
  CHECK(parse_host_port("[::1]:5432").value() == HostPort{"::1", 5432});
}

TEST_CASE("parse_host_port rejects malformed endpoints", "[util][host_port]") {
  const char* bad = GENERATE("10.0.0.1", "10.0.0.1:", ":5432", "10.0.0.1:0", "10.0.0.1:70000",
                             "::1:5432", "[::1]5432", "10.0.0.1:54x2");
  CAPTURE(bad);
  const auto r = parse_host_port(bad);
  REQUIRE_FALSE(r);
  CHECK(r.error() ==
        std::string{"\""} + bad + "\" is not HOST:PORT (e.g. 10.0.0.1:5432 or [::1]:5432)");
}

TEST_CASE("to_string brackets IPv6 and same_endpoint normalises it", "[util][host_port]") {
  CHECK(to_string(HostPort{"::1", 5432}) == "[::1]:5432");
  CHECK(to_string(HostPort{"10.0.0.1", 5432}) == "10.0.0.1:5432");
  CHECK(same_endpoint(HostPort{"::1", 5432}, HostPort{"0:0::1", 5432}));
  CHECK_FALSE(same_endpoint(HostPort{"10.0.0.1", 5432}, HostPort{"10.0.0.1", 5433}));
  CHECK_FALSE(same_endpoint(HostPort{"10.0.0.1", 5432}, HostPort{"10.0.0.2", 5432}));
  CHECK_FALSE(same_endpoint(HostPort{"10.0.0.1", 5432}, HostPort{"10.0.0.10", 5432}));
  // Names: whole and case-insensitive, never a prefix.
  CHECK(same_endpoint(HostPort{"Pg1.Example", 5432}, HostPort{"pg1.example", 5432}));
  CHECK_FALSE(same_endpoint(HostPort{"pg1", 5432}, HostPort{"pg1.example", 5432}));
  CHECK_FALSE(same_endpoint(HostPort{"pg1", 5432}, HostPort{"pg10", 5432}));
  CHECK(is_ip_literal("127.0.0.1"));
  CHECK(is_ip_literal("::1"));
  CHECK_FALSE(is_ip_literal("localhost"));
}

TEST_CASE("server_name_problem accepts one node's name or address and names what is wrong",
          "[util][host_port]") {
  CHECK(server_name_problem("redis-1.example.com").empty());
  CHECK(server_name_problem("localhost").empty());
  CHECK(server_name_problem("10.0.0.1").empty());
  CHECK(server_name_problem("::1").empty());
  CHECK_THAT(server_name_problem("*.example.com"), dbcheck_test::Contains("wildcard"));
  CHECK_THAT(server_name_problem("redis*.example.com"), dbcheck_test::Contains("wildcard"));
  CHECK_THAT(server_name_problem("[::1]"), dbcheck_test::Contains("brackets"));
  CHECK_THAT(server_name_problem("redis:6379"), dbcheck_test::Contains("port"));
  CHECK_THAT(server_name_problem(std::string_view("redis\0evil", 10)),
             dbcheck_test::Contains("NUL"));
  CHECK_THAT(server_name_problem(""), dbcheck_test::Contains("253"));
  CHECK_THAT(server_name_problem("redis.example."), dbcheck_test::Contains("dot"));
  CHECK_THAT(server_name_problem("a..b"), dbcheck_test::Contains("empty label"));
  CHECK_THAT(server_name_problem("has space"), dbcheck_test::Contains("letters, digits"));
  CHECK_THAT(server_name_problem(std::string(64, 'a') + ".example"), dbcheck_test::Contains("63"));
  CHECK_THAT(server_name_problem(std::string(254, 'a')), dbcheck_test::Contains("253"));
}
