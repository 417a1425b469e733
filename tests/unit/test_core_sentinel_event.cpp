// Sentinel event payloads as redis 7.0 / valkey 8 publish them (src/sentinel.c).
#include <core/sentinel_event.hpp>

#include <catch2/catch.hpp>

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
