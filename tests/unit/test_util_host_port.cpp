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
