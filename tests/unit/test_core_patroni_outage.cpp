// Which member's Patroni keeps the leader while no member gives its view of the cluster: what
// Patroni itself keeps, and never a leader this host may be cut off with.
#include "dbcheck_catch.hpp"

#include <core/patroni_outage.hpp>

using namespace dbcheck::core;

namespace {

OutageAnswer answer(const char* url, long http_status, const char* role, bool failsafe = false) {
  PatroniStatus s;
  s.state = "running";
  s.role = role;
  s.failsafe_active = failsafe;
  return {url, LeaderReport{url, http_status, s}};
}

OutageAnswer leader(bool failsafe = false) {
  return answer("http://10.0.0.1:8008", 200, "primary", failsafe);
}

OutageAnswer replica(const char* url) {
  return answer(url, 503, "replica");
}

OutageAnswer failed(const char* url, Failure kind = Failure::timeout) {
  return {url, tl::make_unexpected(ProbeError{kind, "no answer before the deadline", ""})};
}

OutageAnswers three(OutageAnswer a, OutageAnswer b, OutageAnswer c,
                    std::optional<std::size_t> own = std::nullopt) {
  return {{std::move(a), std::move(b), std::move(c)}, own};
}

} // namespace

TEST_CASE("failsafe mode active on the node's own Patroni keeps it, whoever else answers",
          "[core][patroni][outage]") {
  const auto d = outage_leader(
      three(leader(true), failed("http://10.0.0.2:8008"), failed("http://10.0.0.3:8008"), 0));
  REQUIRE(d.leader == 0u);
  CHECK(d.failsafe);
  CHECK_THAT(d.why, dbcheck_test::Contains("failsafe mode is active"));
}

TEST_CASE("without failsafe, the lock by the leader's own clock keeps it only with a majority "
          "answering",
          "[core][patroni][outage]") {
  SECTION("a majority answers, none other a primary: kept") {
    const auto d = outage_leader(
        three(leader(), replica("http://10.0.0.2:8008"), failed("http://10.0.0.3:8008"), 0));
    REQUIRE(d.leader == 0u);
    CHECK_FALSE(d.failsafe);
    CHECK_THAT(d.why, dbcheck_test::Contains("2 of 3 members answer"));
  }
  SECTION("only the leader answers: this host may be cut off with it") {
    const auto d = outage_leader(three(leader(), failed("http://10.0.0.2:8008"),
                                       failed("http://10.0.0.3:8008", Failure::network), 0));
    CHECK_FALSE(d.leader);
    CHECK(d.kind == Failure::timeout);
    CHECK_THAT(d.why, dbcheck_test::Contains("1 of 3 members answer"));
  }
}

TEST_CASE("another member keeping the leader means the node is not the writer",
          "[core][patroni][outage]") {
  const auto d = outage_leader(
      three(leader(true), replica("http://10.0.0.2:8008"), replica("http://10.0.0.3:8008"), 1));
  CHECK_FALSE(d.leader);
  CHECK(d.kind == Failure::role);
  CHECK_THAT(d.why, dbcheck_test::Contains("another member's Patroni keeps the leader"));
}

TEST_CASE("no member keeping a leader: role when the node's own Patroni or every member said so",
          "[core][patroni][outage]") {
  const auto demoted = answer("http://10.0.0.1:8008", 503, "replica");
  SECTION("own answered 503") {
    const auto d = outage_leader(
        three(demoted, failed("http://10.0.0.2:8008"), failed("http://10.0.0.3:8008"), 0));
    CHECK_FALSE(d.leader);
    CHECK(d.kind == Failure::role);
    CHECK_FALSE(d.no_primary); // two members unheard: one of them may lead
  }
  SECTION("a standby cluster's members run no primary by design: nothing was demoted") {
    const auto d =
        outage_leader(three(answer("http://10.0.0.1:8008", 503, "standby_leader"),
                            replica("http://10.0.0.2:8008"), replica("http://10.0.0.3:8008"), 0));
    CHECK_FALSE(d.leader);
    CHECK_FALSE(d.no_primary);
  }
  SECTION("every member answered, none runs a primary") {
    const auto d = outage_leader(
        three(demoted, replica("http://10.0.0.2:8008"), replica("http://10.0.0.3:8008"), 0));
    CHECK_FALSE(d.leader);
    CHECK(d.kind == Failure::role);
    CHECK(d.no_primary);
  }
  SECTION("own unknown, one silent: what stopped the asking") {
    const auto d = outage_leader(three(demoted, replica("http://10.0.0.2:8008"),
                                       failed("http://10.0.0.3:8008", Failure::network)));
    CHECK_FALSE(d.leader);
    CHECK(d.kind == Failure::network);
  }
  SECTION("a primary whose Patroni no longer holds the lock (503) is no leader") {
    const auto d =
        outage_leader(three(answer("http://10.0.0.1:8008", 503, "primary"),
                            replica("http://10.0.0.2:8008"), replica("http://10.0.0.3:8008"), 0));
    CHECK_FALSE(d.leader);
    CHECK(d.kind == Failure::role);
    CHECK_FALSE(d.no_primary); // it still runs one
  }
}

TEST_CASE("a second primary among the members keeps no one", "[core][patroni][outage]") {
  const auto d = outage_leader(three(leader(true), answer("http://10.0.0.2:8008", 503, "master"),
                                     replica("http://10.0.0.3:8008"), 0));
  CHECK_FALSE(d.leader);
  CHECK(d.kind == Failure::protocol);
  CHECK_THAT(d.why, dbcheck_test::Contains("more than one member reports a primary"));
}

TEST_CASE("with no URL on the node's host alone, no leader is kept: nothing ties it to the node",
          "[core][patroni][outage]") {
  // Every member answering does not say which PostgreSQL is the leader's: a read-write node
  // outside the members (a promoted DR node) would pass beside it.
  const auto d = outage_leader(
      three(leader(true), replica("http://10.0.0.2:8008"), replica("http://10.0.0.3:8008")));
  CHECK_FALSE(d.leader);
  CHECK(d.kind == Failure::protocol);
  CHECK_THAT(d.why, dbcheck_test::Contains("which member this node is cannot be told"));
}

TEST_CASE("a leader not running (starting, stopped) is not kept", "[core][patroni][outage]") {
  auto starting = leader(true);
  starting.report->status.state = "starting";
  const auto d = outage_leader(
      three(starting, replica("http://10.0.0.2:8008"), replica("http://10.0.0.3:8008"), 0));
  CHECK_FALSE(d.leader);
  CHECK(d.kind == Failure::role);
}

TEST_CASE("for a replica, the kept leader is any member's but the node's own, and the node's own "
          "Patroni must run it as a replica not tagged noloadbalance",
          "[core][patroni][outage]") {
  const auto r2 = replica("http://10.0.0.2:8008");
  const auto r3 = replica("http://10.0.0.3:8008");
  SECTION("failsafe leader, own member a running replica: the leader is kept") {
    const auto d = outage_leader_for_replica(three(leader(true), r2, r3, 1));
    REQUIRE(d.leader == 0u);
    CHECK_THAT(d.why, dbcheck_test::Contains("failsafe mode is active"));
  }
  SECTION("without failsafe, a majority answering keeps it, as for the writer") {
    CHECK(outage_leader_for_replica(three(leader(), r2, r3, 1)).leader == 0u);
    const auto d =
        outage_leader_for_replica(three(leader(), r2, failed("http://10.0.0.3:8008"), 1));
    CHECK(d.leader == 0u);
    const auto cut =
        outage_leader_for_replica(three(leader(), failed("http://10.0.0.2:8008"),
                                        failed("http://10.0.0.3:8008", Failure::network), 1));
    CHECK_FALSE(cut.leader);
    CHECK(cut.kind == Failure::timeout);
  }
  SECTION("the node's own member keeps the leader: not a replica") {
    const auto d = outage_leader_for_replica(three(leader(true), r2, r3, 0));
    CHECK_FALSE(d.leader);
    CHECK(d.kind == Failure::role);
  }
  SECTION("own member tagged noloadbalance, or not running: out") {
    auto tagged = r2;
    tagged.report->status.noloadbalance = true;
    CHECK(outage_leader_for_replica(three(leader(true), tagged, r3, 1)).kind == Failure::policy);
    auto starting = r2;
    starting.report->status.state = "starting";
    CHECK(outage_leader_for_replica(three(leader(true), starting, r3, 1)).kind ==
          Failure::not_ready);
    CHECK(outage_leader_for_replica(three(leader(true), failed("http://10.0.0.2:8008"), r3, 1))
              .kind == Failure::timeout);
  }
  SECTION("own member unknown: nothing ties the node to a member, as for the writer") {
    const auto d = outage_leader_for_replica(three(leader(true), r2, r3));
    CHECK_FALSE(d.leader);
    CHECK(d.kind == Failure::protocol);
    CHECK_FALSE(outage_leader_for_replica(three(leader(true), r2, r3, 7)).leader); // out of range
  }
  SECTION("no leader kept, or two primaries: none") {
    const auto d = outage_leader_for_replica(three(replica("http://10.0.0.1:8008"), r2, r3, 1));
    CHECK_FALSE(d.leader);
    CHECK(d.kind == Failure::lag);
    CHECK_FALSE(outage_leader_for_replica(
                    three(leader(true), answer("http://10.0.0.2:8008", 503, "primary"), r3, 1))
                    .leader);
  }
}
