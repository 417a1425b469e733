// The replica check's lag bound, through scripted peers (pg_check_fixtures.hpp): the order that
// makes it sound (the leader sampled first, at an earlier deadline), and the catch-up watch of a
// replica a little behind the sample.
#include "dbcheck_catch.hpp"
#include "pg_check_fixtures.hpp"

#include <core/pg_rows.hpp>
#include <probe/catch_up.hpp>
#include <probe/pg_check.hpp>

#include <string>

using namespace dbcheck;
using namespace dbcheck::testing::pg_check;
using namespace std::chrono_literals;
using testing::FakePeers;

namespace {

// The replay query asked of pg2, as FakePeers::log() has it.
const std::string k_replay_query = std::string{"sql 10.0.0.2:5432 "} + core::k_replay_sql;

} // namespace

TEST_CASE("a replica is read only after the leader is sampled", "[probe][pg]") {
  auto f = lab({"0/3000060"});
  const auto r = check(f, config::Role::replica, k_replica);
  const int sample = f->first("sql 10.0.0.1:5432");
  REQUIRE(sample >= 0);
  REQUIRE(f->first(k_replica_query) > sample);
  CHECK(r.verdict.state == core::State::up);
  REQUIRE(r.lag);
  REQUIRE(r.lag->seconds);
  CHECK(*r.lag->seconds < 0.1);
}

TEST_CASE("the leader's sample gets an earlier deadline than the replica's own query",
          "[probe][pg]") {
  auto f = lab({"0/3000060"});
  check(f, config::Role::replica, k_replica);
  const auto log = f->log();
  const auto sample = log.at(static_cast<std::size_t>(f->first("sql 10.0.0.1:5432")));
  const auto own = log.at(static_cast<std::size_t>(f->first(k_replica_query)));
  // A quarter of the 10 s left is kept for the replica's own query.
  CHECK(own.by - sample.by >= 2s);
  CHECK(own.by - sample.by <= 3s);
}

TEST_CASE("a replica a little behind the sample is watched until it passes it", "[probe][pg]") {
  auto f = lab({"0/3000000", "0/3000010", "0/3000060"});
  const auto r = check(f, config::Role::replica, k_replica);
  CHECK(f->count(k_replay_query) == 2);
  CHECK(f->sleeps() == 2);
  CHECK_THAT(node_step(r).answer, dbcheck_test::Contains("replay_lsn=0/3000060") &&
                                      dbcheck_test::Contains("(replay polled 3 times)"));
  CHECK(r.verdict.state == core::State::up);
  REQUIRE(r.lag->seconds);
  CHECK(*r.lag->seconds < 0.1);
}

TEST_CASE("a replica's node step times the node alone: the leader's sample and the watch are "
          "not its",
          "[probe][pg][latency]") {
  auto f = lab({"0/3000000", "0/3000010", "0/3000060"});
  FakePeers* peers = f.get();
  const auto replica = f->pg_answers["10.0.0.2:5432"];
  f->pg_answers["10.0.0.2:5432"] = [replica, peers](const std::string& sql) {
    if (sql == core::k_replica_sql) {
      peers->sleep_for(250ms); // the node's own slowness
    }
    return replica(sql);
  };
  const auto leader = f->pg_answers["10.0.0.1:5432"];
  f->pg_answers["10.0.0.1:5432"] = [leader, peers](const std::string& sql) {
    peers->sleep_for(200ms); // a slow leader is the sample's time, not the replica's
    return leader(sql);
  };
  const auto r = check(f, config::Role::replica, k_replica);
  CHECK(f->count(k_replay_query) == 2);
  CHECK(r.node_answered);
  // Its connection and its answer (1 ms each on the fake clock, and the 250 ms); Patroni's
  // GETs may tick the shared fake clock meanwhile, a few ms at most.
  CHECK(node_step(r).latency_ms >= 251.0);
  CHECK(node_step(r).latency_ms < 260.0);
}

TEST_CASE("the watch ends once the sample is max_lag old", "[probe][pg]") {
  auto f = lab({"0/3000000"}); // never catches up
  const auto r = check(f, config::Role::replica, k_replica, util::Duration{100});
  const auto log = f->log();
  const auto sampled = log.at(static_cast<std::size_t>(f->first("sql 10.0.0.1:5432"))).at;
  const auto last = log.back();
  REQUIRE(last.what == k_replay_query);
  // Every read was made inside the window; the last within one pause of its end.
  CHECK(last.at <= sampled + 100ms + f->answer_takes);
  CHECK(last.at >= sampled + 100ms - probe::k_catch_up_pause - 2 * f->answer_takes);
  // Behind the sample: the bound falls back to the last replayed commit's age (0.5 s).
  REQUIRE(r.lag->seconds);
  CHECK(*r.lag->seconds >= 0.5);
  CHECK(r.verdict.state == core::State::down);
}

TEST_CASE("no watch when waiting cannot help", "[probe][pg]") {
  SECTION("another timeline: LSNs do not compare") {
    auto f = lab({"0/3000000", "0/3000060"}, "2");
    check(f, config::Role::replica, k_replica);
    CHECK(f->count(k_replay_query) == 0);
  }
  SECTION("replay paused") {
    auto f = lab({"0/3000000", "0/3000060"}, "1", "t");
    check(f, config::Role::replica, k_replica);
    CHECK(f->count(k_replay_query) == 0);
  }
}
