// Sentinel event payloads as redis 7.0 / valkey 8 publish them (src/sentinel.c).
#include "dbcheck_catch.hpp"

#include <core/sentinel_event.hpp>

using namespace dbcheck::core;
using dbcheck::util::HostPort;

TEST_CASE("events name their master and whether a failover began", "[core][redis][event]") {
  auto e = parse_sentinel_event("+try-failover", "master hcmaster 127.0.0.1 56379");
  REQUIRE(e);
  CHECK(e->master_name == "hcmaster");
  CHECK(e->master == HostPort{"127.0.0.1", 56379});
  CHECK(e->failover);

  e = parse_sentinel_event("+selected-slave",
                           "slave 127.0.0.1:56380 127.0.0.1 56380 @ hcmaster 127.0.0.1 56379");
  REQUIRE(e);
  CHECK(e->master_name == "hcmaster");
  CHECK(e->master == HostPort{"127.0.0.1", 56379}); // the master, not the replica
  CHECK(e->failover);

  e = parse_sentinel_event("+switch-master", "hcmaster 127.0.0.1 56379 127.0.0.1 56380");
  REQUIRE(e);
  CHECK(e->master == HostPort{"127.0.0.1", 56379}); // the old master
  CHECK(e->failover);

  e = parse_sentinel_event("+failover-state-send-slaveof-noone",
                           "slave 127.0.0.1:56380 127.0.0.1 56380 @ hcmaster 127.0.0.1 56379");
  REQUIRE(e);
  CHECK(e->failover);

  e = parse_sentinel_event("+sdown", "master hcmaster 127.0.0.1 56379");
  REQUIRE(e);
  CHECK_FALSE(e->failover);
  e = parse_sentinel_event("-failover-abort-slave-timeout", "master hcmaster 127.0.0.1 56379");
  REQUIRE(e);
  CHECK_FALSE(e->failover);
}

TEST_CASE("a payload not in a known form names no master", "[core][redis][event]") {
  CHECK_FALSE(parse_sentinel_event("+try-failover", ""));
  CHECK_FALSE(parse_sentinel_event("+try-failover", "master hcmaster 127.0.0.1"));
  CHECK_FALSE(parse_sentinel_event("+try-failover", "master hcmaster 127.0.0.1 notaport"));
  CHECK_FALSE(parse_sentinel_event("+switch-master", "hcmaster 127.0.0.1 56379"));
  CHECK_FALSE(parse_sentinel_event("+selected-slave", "slave a 127.0.0.1 56380 @ hcmaster x"));
}

TEST_CASE("words are counted exactly: no payload passes for another master",
          "[core][redis][event]") {
  CHECK_FALSE(parse_sentinel_event("+try-failover", "master cache 10.0.0.1 6379 extra"));
  CHECK_FALSE(parse_sentinel_event(
      "+selected-slave", "master x 10.0.0.9 1 @ cache 10.0.0.1 6379")); // not a replica entry
  CHECK_FALSE(
      parse_sentinel_event("+selected-slave", "slave a 10.0.0.2 6379 @ cache 10.0.0.1 6379 more"));
  const auto v = parse_sentinel_event("+selected-slave",
                                      "replica 10.0.0.2:6379 10.0.0.2 6379 @ cache 10.0.0.1 6379");
  REQUIRE(v);
  CHECK(v->master_name == "cache");
}
