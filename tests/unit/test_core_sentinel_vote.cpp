#include <core/sentinel_vote.hpp>

#include <catch2/catch.hpp>

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
