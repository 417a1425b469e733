// Both verdicts with the DCS unreadable, no member giving its view: every member's GET /primary
// says which leader Patroni keeps under failsafe mode, and the node's own answer still decides.
#include "dbcheck_catch.hpp"
#include "pg_verdict_fixtures.hpp"

#include <core/pg_verdict.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace dbcheck::core;
using namespace dbcheck::testing::pg_verdict;

namespace {

// No member gave its view (every GET /cluster timed out); every member's GET /primary.
WriterObservation outage_obs(const std::string& node, std::vector<OutageAnswer> answers,
                             std::optional<std::size_t> own = 0) {
  WriterObservation obs = writer_obs("timeout", node, "not asked");
  obs.quorum = false;
  obs.outage = OutageAnswers{std::move(answers), own};
  return obs;
}

OutageAnswer primary_answer(long http_status, const char* role, bool failsafe,
                            const char* url = "http://10.0.0.1:8008") {
  LeaderReport r = confirming(role, "running", http_status);
  r.url = url;
  r.status.failsafe_active = failsafe;
  return {url, r};
}

} // namespace

TEST_CASE("writer: with the DCS unreadable, Patroni's leader under failsafe keeps its writer",
          "[core][pg][writer][outage]") {
  const auto replica2 = primary_answer(503, "replica", false, "http://10.0.0.2:8008");
  SECTION("failsafe active, node read-write: up, the reason says why") {
    const Verdict v = evaluate_writer(
        outage_obs("rw", {primary_answer(200, "primary", true),
                          primary_answer(503, "replica", false, "http://10.0.0.2:8008")}),
        SaturationPolicy::up);
    CHECK(v.state == State::up);
    CHECK_THAT(v.reason, dbcheck_test::Contains("no member gives its view") &&
                             dbcheck_test::Contains("keeps this node leader without its DCS") &&
                             dbcheck_test::Contains("failsafe mode is active"));
    CHECK(v.named == Named::unknown); // no majority's view: never starts a rise count
  }
  SECTION("the node itself says recovery: the node's opinion still decides") {
    const Verdict v =
        evaluate_writer(outage_obs("recovery", {primary_answer(200, "primary", true), replica2}),
                        SaturationPolicy::up);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::role);
  }
  SECTION("its own Patroni has demoted it (503): not the writer") {
    const Verdict v = evaluate_writer(
        outage_obs("rw", {primary_answer(503, "replica", false), replica2}), SaturationPolicy::up);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::role);
    CHECK_THAT(v.reason, dbcheck_test::Contains("does not keep it leader"));
    // Every member answered and none runs a primary: the agent may count it (health_tracker).
    CHECK(v.named == Named::no_primary);
  }
  SECTION("a node of another cluster is caught by the leader's identifier") {
    auto other = outage_obs("rw", {primary_answer(200, "primary", true), replica2});
    other.node_answer->system_id = k_sysid + 1;
    const Verdict v = evaluate_writer(other, SaturationPolicy::up);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::identity);
  }
  SECTION("not asked (the members answered, or were never asked): as before, down") {
    auto none = writer_obs("timeout", "rw", "not asked");
    const Verdict v = evaluate_writer(none, SaturationPolicy::up);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::timeout);
  }
}

namespace {

// A replica's observation with no member's view: every member's GET /primary instead.
ReplicaObservation replica_outage_obs(std::vector<OutageAnswer> answers,
                                      std::optional<std::size_t> own = 1) {
  ReplicaObservation obs{
      k_replica,
      tl::make_unexpected(ProbeError{Failure::timeout, "timeout: no member answered", ""}),
      streaming(),
      lag(0.01),
      3,
      k_sysid,
      "http://10.0.0.1:8008"};
  obs.outage = OutageAnswers{std::move(answers), own};
  return obs;
}

} // namespace

TEST_CASE("reader: with the DCS unreadable, a replica is judged against the leader Patroni "
          "keeps, as its GET /replica keeps running replicas",
          "[core][pg][replica][outage]") {
  const auto kept = primary_answer(200, "primary", true);
  const auto self = primary_answer(503, "replica", false, "http://10.0.0.2:8008");
  SECTION("streaming, within max_lag: up, and the reason says the DCS cannot be read") {
    const Verdict v = evaluate_replica(replica_outage_obs({kept, self}), 1.0);
    CHECK(v.state == State::up);
    CHECK_THAT(v.reason, dbcheck_test::Contains("no member gives its view of the cluster") &&
                             dbcheck_test::Contains("failsafe mode is active") &&
                             dbcheck_test::Contains("its Patroni at http://10.0.0.2:8008"));
  }
  SECTION("over max_lag: down/lag as ever") {
    auto obs = replica_outage_obs({kept, self});
    obs.lag = lag(5);
    const Verdict v = evaluate_replica(obs, 1.0);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::lag);
  }
  SECTION("a synchronous-only backend: which standbys are synchronous is in the DCS") {
    const Verdict v =
        evaluate_replica(replica_outage_obs({kept, self}), 1.0, ReaderChoice::synchronous);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::policy);
  }
  SECTION("no member keeps a leader: nothing to measure against") {
    const auto demoted = primary_answer(503, "replica", false);
    const Verdict v = evaluate_replica(replica_outage_obs({demoted, self}), 1.0);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::lag);
    CHECK_THAT(v.reason, dbcheck_test::Contains("no member's Patroni keeps a leader"));
  }
  SECTION("which member the node is unknown: fails closed, as the writer") {
    const Verdict v = evaluate_replica(replica_outage_obs({kept, self}, std::nullopt), 1.0);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::protocol);
    CHECK_THAT(v.reason, dbcheck_test::Contains("which member this node is cannot be told"));
  }
  SECTION("the identifiers tie the node to its member's cluster: both must be read") {
    auto hidden = replica_outage_obs({kept, self});
    hidden.node_answer->system_id.reset();
    CHECK(evaluate_replica(hidden, 1.0).failure == Failure::config);
    auto unsaid = replica_outage_obs({kept, self});
    unsaid.leader_system_id.reset();
    CHECK(evaluate_replica(unsaid, 1.0).failure == Failure::protocol);
    auto other = replica_outage_obs({kept, self});
    other.node_answer->system_id = k_sysid + 1;
    CHECK(evaluate_replica(other, 1.0).failure == Failure::identity);
  }
}
