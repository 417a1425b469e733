#include "dbcheck_catch.hpp"

#include <core/replica_lag.hpp>

using namespace dbcheck::core;

TEST_CASE("caught up with the primary's sample: lag is the time since the sample", "[core][lag]") {
  LagEvidence e;
  e.primary_sampled = true;
  e.caught_up_after_s = 0.004;
  e.since_last_replay_s = 3600; // an idle primary: the replay timestamp is an hour old
  const LagEstimate l = estimate_lag(e);
  REQUIRE(l.seconds);
  CHECK(*l.seconds == Approx(0.004));
  CHECK(l.derivation == "replayed past the primary's WAL position sampled 0.004s earlier");
}

TEST_CASE("behind the sample: the last replayed commit bounds the staleness", "[core][lag]") {
  LagEvidence e;
  e.primary_sampled = true;
  e.behind_for_s = 0.785;
  e.since_last_replay_s = 12.3;
  const LagEstimate l = estimate_lag(e);
  REQUIRE(l.seconds);
  CHECK(*l.seconds == Approx(12.3));
  CHECK(l.derivation == "replay still behind the primary's WAL position after 0.785s; last "
                        "replayed commit was 12.300s ago");
}

TEST_CASE("no sample: the last replayed commit is the only bound", "[core][lag]") {
  LagEvidence e;
  e.primary_problem = "leader pg1: timeout";
  e.since_last_replay_s = 0.2;
  const LagEstimate l = estimate_lag(e);
  CHECK(l.seconds.value() == Approx(0.2));
  CHECK(l.derivation ==
        "primary not sampled (leader pg1: timeout); last replayed commit was 0.200s ago");
}

TEST_CASE("nothing bounds the lag: unknown, never zero", "[core][lag]") {
  LagEvidence behind;
  behind.primary_sampled = true;
  behind.behind_for_s = 0.5;
  CHECK_FALSE(estimate_lag(behind).seconds);
  CHECK(estimate_lag(behind).derivation == "replay still behind the primary's WAL position "
                                           "after 0.500s; no commit replayed since the replica "
                                           "started");
  LagEvidence none;
  CHECK_FALSE(estimate_lag(none).seconds);
  CHECK(estimate_lag(none).derivation ==
        "primary not sampled (no leader known); no commit replayed since the replica started");
}

TEST_CASE("clock skew makes the fallback bound unknown, never zero", "[core][lag]") {
  LagEvidence e;
  e.since_last_replay_s = -0.05; // the primary's clock runs ahead of the replica's
  const LagEstimate l = estimate_lag(e);
  CHECK_FALSE(l.seconds);
  CHECK(l.derivation == "primary not sampled (no leader known); the last replayed commit is "
                        "dated 0.050s in the replica's future (clock skew between primary and "
                        "replica)");
}
