#include "dbcheck_catch.hpp"

#include <core/redis_switchover_plan.hpp>

using namespace dbcheck::core;
using dbcheck::util::Duration;
using dbcheck::util::HostPort;

namespace {

SentinelReplica replica(const char* host, const char* flags = "slave", const char* link = "ok") {
  return {HostPort{host, 6379}, flags, link};
}

RedisPlanInput input() {
  RedisPlanInput in;
  in.master_name = "cache";
  in.old_master = HostPort{"10.0.0.1", 6379};
  in.replicas = {replica("10.0.0.2"), replica("10.0.0.3", "slave,s_down"),
                 replica("10.0.0.4", "slave", "err")};
  in.remaining = Duration{59'500};
  in.pause_margin = Duration{10'000};
  in.catch_up = Duration{5'000};
  in.needed = 2;
  in.configured = 3;
  return in;
}

} // namespace

TEST_CASE("only replicas linked and up may be promoted", "[core][switchover]") {
  auto plan = plan_redis_switchover(input());
  REQUIRE(plan);
  CHECK(plan->eligible == std::vector<std::string>{"10.0.0.2:6379"});
  CHECK(plan->eligible_addrs == std::vector<HostPort>{{"10.0.0.2", 6379}});
  REQUIRE(plan->steps.size() == 6);
  CHECK(plan->steps[1] == "wait up to 5s until 10.0.0.2:6379 processed 10.0.0.1:6379's "
                          "replication stream up to its offset once paused (ROLE); else unpause "
                          "it, still the master, and stop");
  CHECK(plan->steps[2].find("Sentinel promotes one of: 10.0.0.2:6379") != std::string::npos);
  CHECK(plan->steps[3].find("wait until 2 of the 3 Sentinels") != std::string::npos);
  CHECK(plan->steps[5] == "CLIENT UNPAUSE on 10.0.0.1:6379");

  auto none = input();
  none.replicas = {replica("10.0.0.3", "slave,disconnected")};
  const auto refused = plan_redis_switchover(none);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().find("no healthy replica") != std::string::npos);
}

TEST_CASE("the pause outlives what is left of the deadline by the margin", "[core][switchover]") {
  auto plan = plan_redis_switchover(input());
  REQUIRE(plan);
  CHECK(plan->pause_ms == 69'500);
  CHECK(plan->steps[0].find("CLIENT PAUSE 69500 WRITE") != std::string::npos);
  CHECK(plan->steps[0].find("by at least 10s") != std::string::npos);

  auto given = input();
  given.pause = Duration{120'000};
  CHECK(plan_redis_switchover(given)->pause_ms == 120'000);
}

TEST_CASE("a --to replica must be the one healthy replica: Sentinel picks the replica itself",
          "[core][switchover]") {
  auto in = input();
  in.to = HostPort{"10.0.0.3", 6379};
  const auto unhealthy = plan_redis_switchover(in);
  REQUIRE_FALSE(unhealthy);
  CHECK(unhealthy.error() ==
        "--to 10.0.0.3:6379 is not a healthy replica of 10.0.0.1:6379 (healthy: 10.0.0.2:6379)");

  in.to = HostPort{"10.0.0.2", 6379};
  CHECK(plan_redis_switchover(in));

  in.replicas.push_back(replica("10.0.0.5"));
  const auto two = plan_redis_switchover(in);
  REQUIRE_FALSE(two);
  CHECK(two.error().find("2 are eligible; give the others replica-priority 0") !=
        std::string::npos);
}

namespace {

RedisRole replica_at(long long offset, const char* link = "connected") {
  return {false, offset, HostPort{"10.0.0.1", 6379}, link};
}

// One look at the eligible replicas while they catch up with the master's offset 1000.
struct CatchUpRow {
  const char* outcome;
  std::vector<ReplicaProgress> seen;
  std::vector<std::string> behind; // empty: every one has caught up
};

} // namespace

TEST_CASE("a replica has caught up once it processed the paused master's offset",
          "[core][switchover]") {
  const auto failed = [](const char* why) -> tl::expected<RedisRole, std::string> {
    return tl::make_unexpected(std::string{why});
  };
  const RedisRole master{true, 1000, {}, ""};
  const CatchUpRow row = GENERATE_COPY(values<CatchUpRow>({
      {"at the offset", {{"10.0.0.2:6379", replica_at(1000)}}, {}},
      {"past it (the master's replication PING)", {{"10.0.0.2:6379", replica_at(1014)}}, {}},
      {"every one at it",
       {{"10.0.0.2:6379", replica_at(1000)}, {"10.0.0.3:6379", replica_at(1000)}},
       {}},
      {"short of it",
       {{"10.0.0.2:6379", replica_at(900)}},
       {"10.0.0.2:6379 at offset 900 of the master's 1000"}},
      {"one short, one there: only the one short is named",
       {{"10.0.0.2:6379", replica_at(1000)}, {"10.0.0.3:6379", replica_at(999)}},
       {"10.0.0.3:6379 at offset 999 of the master's 1000"}},
      {"no link to a master",
       {{"10.0.0.2:6379", replica_at(-1, "connect")}},
       {"10.0.0.2:6379 has no link to a master (connect)"}},
      {"a master itself", {{"10.0.0.2:6379", master}}, {"10.0.0.2:6379 answers ROLE master"}},
      {"could not be asked",
       {{"10.0.0.2:6379", failed("connection refused")}},
       {"10.0.0.2:6379 not asked (connection refused)"}},
  }));
  INFO(row.outcome);
  CHECK(replicas_behind(1000, row.seen) == row.behind);
}

TEST_CASE("the paused old master is released only when no second master can exist",
          "[core][switchover]") {
  const HostPort old{"10.0.0.1", 6379};
  const HostPort fresh{"10.0.0.2", 6379};
  SECTION("FAILOVER not sent") {
    CHECK(release_for(false, old, old).action == ReleaseAction::unpause);
    CHECK(release_for(false, std::nullopt, old).action == ReleaseAction::unpause);
    // A failover not ours moved the majority meanwhile: follow it, never unpause a master.
    const Release moved = release_for(false, fresh, old);
    CHECK(moved.action == ReleaseAction::demote);
    CHECK(moved.target == fresh);
  }
  SECTION("FAILOVER accepted or maybe accepted") {
    CHECK(release_for(true, old, old).action == ReleaseAction::keep_looking);
    CHECK(release_for(true, std::nullopt, old).action == ReleaseAction::keep_looking);
    const Release moved = release_for(true, fresh, old);
    CHECK(moved.action == ReleaseAction::demote);
    CHECK(moved.target == fresh);
  }
}

TEST_CASE("FAILOVER answered -INPROG may be under way; other errors are refusals",
          "[core][switchover]") {
  CHECK(failover_sent_for(RespValue::status("OK")) == FailoverSent::accepted);
  // A failover already under way demotes the old master: it must stay paused.
  CHECK(failover_sent_for(RespValue::error("INPROG Failover already in progress")) ==
        FailoverSent::in_progress);
  CHECK(failover_sent_for(RespValue::error("NOGOODSLAVE No suitable replica to promote")) ==
        FailoverSent::refused);
  CHECK(failover_sent_for(RespValue::error("NOGOODSLAVE No suitable slave to promote")) ==
        FailoverSent::refused);
  CHECK(failover_sent_for(RespValue::error("ERR No such master with that name")) ==
        FailoverSent::refused);
  // Only the code counts, not the word anywhere in the text.
  CHECK(failover_sent_for(RespValue::error("ERR INPROG")) == FailoverSent::refused);
}
