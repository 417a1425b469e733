#include "dbcheck_catch.hpp"

#include <core/sentinel_vote.hpp>
#include <util/format.hpp>

#include <random>

using namespace dbcheck::core;
using dbcheck::util::HostPort;

namespace {

SentinelAnswer names(const char* sentinel, const char* host, std::uint16_t port,
                     const char* flags = "master", long long epoch = 1) {
  SentinelView v;
  v.master = HostPort{host, port};
  v.flags = flags;
  v.config_epoch = epoch;
  return {HostPort{sentinel, 26379}, v};
}

SentinelAnswer fails(const char* sentinel, Failure kind, const char* detail) {
  return {HostPort{sentinel, 26379}, tl::make_unexpected(ProbeError{kind, detail, ""})};
}

} // namespace

TEST_CASE("a strict majority of the configured Sentinels is needed", "[core][redis][vote]") {
  const HostPort node{"10.0.0.1", 6379};
  const std::vector<SentinelAnswer> two_of_three = {names("s1", "10.0.0.1", 6379),
                                                    names("s2", "10.0.0.1", 6379),
                                                    fails("s3", Failure::timeout, "timeout")};
  CHECK(votes_for(two_of_three, node) == 2);
  const SentinelTally t = tally_sentinels(two_of_three, 3);
  CHECK(t.needed == 2);
  REQUIRE(t.majority);
  CHECK(*t.majority == node);
  CHECK(t.majority_votes == 2);
  CHECK(t.detail == "s1:26379 names 10.0.0.1:6379 (epoch 1, flags master); s2:26379 names "
                    "10.0.0.1:6379 (epoch 1, flags master); s3:26379: timeout");

  // Only one Sentinel answered: it is all of those that answered, but not a majority.
  const std::vector<SentinelAnswer> one = {names("s1", "10.0.0.1", 6379)};
  CHECK_FALSE(tally_sentinels(one, 3).majority);
  // Even counts: 2 of 4 is not a strict majority.
  const std::vector<SentinelAnswer> half = {
      names("s1", "10.0.0.1", 6379), names("s2", "10.0.0.1", 6379),
      names("s3", "10.0.0.2", 6379, "master", 2), names("s4", "10.0.0.2", 6379, "master", 2)};
  CHECK(tally_sentinels(half, 4).needed == 3);
  CHECK_FALSE(tally_sentinels(half, 4).majority);
}

TEST_CASE("addresses match exactly: host and port", "[core][redis][vote]") {
  const std::vector<SentinelAnswer> answers = {names("s1", "10.0.0.10", 6379),
                                               names("s2", "10.0.0.10", 6379),
                                               names("s3", "10.0.0.1", 6380)};
  CHECK(votes_for(answers, HostPort{"10.0.0.1", 6379}) == 0); // not a substring match
  CHECK(votes_for(answers, HostPort{"10.0.0.1", 6380}) == 1); // same host, other port
  CHECK(votes_for(answers, HostPort{"10.0.0.10", 6379}) == 2);
}

TEST_CASE("unsettled or failed Sentinels vote for no one", "[core][redis][vote]") {
  const HostPort node{"10.0.0.1", 6379};
  const std::vector<SentinelAnswer> answers = {
      names("s1", "10.0.0.1", 6379, "master,o_down"),
      names("s2", "10.0.0.1", 6379, "master,failover_in_progress"), names("s3", "10.0.0.1", 6379)};
  CHECK(votes_for(answers, node) == 1);
  const SentinelTally t = tally_sentinels(answers, 3);
  CHECK_FALSE(t.majority);
  CHECK(t.detail.find("flags master,o_down): not counted") != std::string::npos);

  SentinelAnswer unknown{HostPort{"s4", 26379}, SentinelView{}};
  CHECK(votes_for({unknown}, node) == 0);
  CHECK(tally_sentinels({unknown}, 1).detail == "s4:26379 does not know the master name");
}

TEST_CASE("a newer config epoch naming another master makes a majority stale",
          "[core][redis][vote]") {
  const HostPort node{"10.0.0.1", 6379};
  const std::vector<SentinelAnswer> switched = {names("s1", "10.0.0.1", 6379, "master", 3),
                                                names("s2", "10.0.0.1", 6379, "master", 3),
                                                names("s3", "10.0.0.2", 6379, "master", 4)};
  CHECK(votes_for(switched, node) == 2);
  CHECK(newer_elsewhere(switched, node) == std::vector<HostPort>{HostPort{"s3", 26379}});
  // The new master: nobody names another one at a newer epoch (it waits for its majority).
  CHECK(newer_elsewhere(switched, HostPort{"10.0.0.2", 6379}).empty());
  // An older epoch elsewhere is a Sentinel that has not caught up: no objection.
  const std::vector<SentinelAnswer> behind = {names("s1", "10.0.0.1", 6379, "master", 4),
                                              names("s2", "10.0.0.2", 6379, "master", 3)};
  CHECK(newer_elsewhere(behind, node).empty());
  // An answer without an epoch is left out; it does not switch the rule off for the others.
  SentinelAnswer no_epoch = names("s1", "10.0.0.1", 6379);
  no_epoch.view->config_epoch.reset();
  CHECK(newer_elsewhere({no_epoch, names("s2", "10.0.0.2", 6379, "master", 9)}, node).empty());
  CHECK(newer_elsewhere({no_epoch, names("s2", "10.0.0.1", 6379, "master", 3),
                         names("s3", "10.0.0.2", 6379, "master", 9)},
                        node) == std::vector<HostPort>{HostPort{"s3", 26379}});
  // No one names the node: the count already says no.
  CHECK(newer_elsewhere({names("s1", "10.0.0.2", 6379, "master", 9)}, node).empty());
}

TEST_CASE("a common failure is reported as such", "[core][redis][vote]") {
  const std::vector<SentinelAnswer> down = {fails("s1", Failure::network, "refused"),
                                            fails("s2", Failure::network, "refused"),
                                            fails("s3", Failure::network, "refused")};
  CHECK(tally_sentinels(down, 3).common_failure == Failure::network);
  const std::vector<SentinelAnswer> mixed = {fails("s1", Failure::network, "refused"),
                                             fails("s2", Failure::timeout, "timeout"),
                                             names("s3", "10.0.0.1", 6379)};
  CHECK_FALSE(tally_sentinels(mixed, 3).common_failure);
}

TEST_CASE("a Sentinel answering twice is one vote", "[core][redis][vote]") {
  const HostPort node{"10.0.0.1", 6379};
  // s1 listed twice, alone: it must not make a majority of three on its own.
  const std::vector<SentinelAnswer> twice = {names("s1", "10.0.0.1", 6379),
                                             names("s1", "10.0.0.1", 6379),
                                             fails("s2", Failure::timeout, "timeout")};
  CHECK(votes_for(twice, node) == 1);
  CHECK_FALSE(tally_sentinels(twice, 3).majority);
  // Spelled differently, the same IPv6 Sentinel is still one.
  const std::vector<SentinelAnswer> spelled = {
      {HostPort{"::1", 26379}, names("x", "10.0.0.1", 6379).view},
      {HostPort{"0:0:0:0:0:0:0:1", 26379}, names("x", "10.0.0.1", 6379).view}};
  CHECK(votes_for(spelled, node) == 1);
}

TEST_CASE("more distinct answers than configured raise the bar", "[core][redis][vote]") {
  const std::vector<SentinelAnswer> four = {
      names("s1", "10.0.0.1", 6379), names("s2", "10.0.0.1", 6379), names("s3", "10.0.0.2", 6379),
      names("s4", "10.0.0.2", 6379)};
  const SentinelTally t = tally_sentinels(four, 3);
  CHECK(t.configured == 4);
  CHECK(t.needed == 3);
  CHECK_FALSE(t.majority);
}

TEST_CASE("the tally's invariants hold for any answers", "[core][redis][vote][property]") {
  // Random answers over 5 Sentinel names (so duplicates are common), 3 masters, flags and
  // failures, with `configured` both below and above the number of answers.
  std::mt19937 rng(20261130);
  const std::vector<HostPort> masters = {
      {"10.0.0.1", 6379}, {"10.0.0.2", 6379}, {"10.0.0.10", 6379}};
  const std::vector<const char*> flags = {"master", "master", "master,o_down",
                                          "master,failover_in_progress", "master,s_down"};
  for (int round = 0; round < 20000; ++round) {
    std::vector<SentinelAnswer> answers;
    const int n = static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) {
      const HostPort who{dbcheck::util::format("s{}", rng() % 5), 26379};
      if (rng() % 5 == 0) {
        answers.push_back({who, tl::make_unexpected(ProbeError{Failure::timeout, "t", ""})});
      } else {
        SentinelView v;
        v.master = masters[rng() % masters.size()];
        v.flags = flags[rng() % flags.size()];
        answers.push_back({who, v});
      }
    }
    const std::size_t configured = 1 + rng() % 6;
    CAPTURE(round, configured, answers.size());
    // The first answer of each Sentinel, brute force.
    std::vector<SentinelAnswer> once;
    for (const auto& a : answers) {
      bool seen = false;
      for (const auto& o : once) {
        seen = seen || o.sentinel == a.sentinel;
      }
      if (!seen) {
        once.push_back(a);
      }
    }
    const SentinelTally t = tally_sentinels(answers, configured);
    const SentinelTally t_once = tally_sentinels(once, configured);
    CHECK(t.configured == std::max(configured, once.size()));
    CHECK(t.needed == t.configured / 2 + 1);
    CHECK(t.majority == t_once.majority); // duplicates never change the outcome
    std::size_t winners = 0;
    for (const auto& m : masters) {
      std::size_t brute = 0;
      for (const auto& a : once) {
        brute += a.view && a.view->master == m && !a.view->unsettled() ? 1 : 0;
      }
      CHECK(votes_for(answers, m) == brute);
      CHECK(votes_for(answers, m) <= t.configured);
      winners += brute >= t.needed ? 1 : 0;
      if (t.majority && *t.majority == m) {
        CHECK(brute >= t.needed);
        CHECK(2 * brute > t.configured); // a strict majority of the distinct electorate
      }
    }
    CHECK(winners <= 1);
    CHECK(t.majority.has_value() == (winners == 1));
    // Any Sentinel failing the master over is reported.
    bool failing = false;
    for (const auto& a : once) {
      failing = failing || (a.view && a.view->failing_over());
    }
    CHECK(t.failing_over.empty() == !failing);
  }
}
