// The one rule a lease follows when a kept connection fails (probe/lease_retry.hpp).
#include "dbcheck_catch.hpp"

#include <probe/lease_retry.hpp>

using namespace dbcheck;
using core::Failure;
using core::ProbeError;

namespace {

struct Script {
  std::vector<tl::expected<int, ProbeError>> answers; // one per request, in turn
  tl::expected<void, ProbeError> reopen_answer;
  int requests = 0;
  int reopens = 0;

  tl::expected<int, ProbeError> run(bool reused, const probe::Deadline& d) {
    return probe::retry_if_stale(
        reused, d, [&] { return answers.at(static_cast<std::size_t>(requests++)); },
        [&] {
          ++reopens;
          return reopen_answer;
        });
  }
};

tl::expected<int, ProbeError> fails(Failure kind) {
  return tl::make_unexpected(ProbeError{kind, "x", ""});
}

// A deadline well ahead of each call. Made per call, never once at start-up: a deadline taken
// when the test binary starts has passed by the time this test runs on a slow machine (the
// whole binary under ASan took more than 10 s beside stress-ng), and a passed deadline
// rightly forbids the retry these tests expect.
probe::Deadline later() {
  return probe::Deadline::in(util::Duration{600'000});
}

} // namespace

TEST_CASE("a kept connection that died while idle is replaced once", "[probe][lease]") {
  Script s{{fails(Failure::network), 7}, {}};
  CHECK(s.run(true, later()) == 7);
  CHECK(s.requests == 2);
  CHECK(s.reopens == 1);
}

TEST_CASE("no second try where it cannot help", "[probe][lease]") {
  SECTION("a new connection's failure is the answer") {
    Script s{{fails(Failure::network), 7}, {}};
    CHECK_FALSE(s.run(false, later()));
    CHECK(s.reopens == 0);
  }
  SECTION("a timeout, an auth error or a server error is not a dead idle connection") {
    const auto kind = GENERATE(Failure::timeout, Failure::auth, Failure::protocol);
    Script s{{fails(kind), 7}, {}};
    CHECK(s.run(true, later()).error().kind == kind);
    CHECK(s.reopens == 0);
  }
  SECTION("the deadline has come") {
    Script s{{fails(Failure::network), 7}, {}};
    CHECK_FALSE(s.run(true, probe::Deadline{probe::Clock::now()}));
    CHECK(s.reopens == 0);
  }
  SECTION("the reopen fails: its error is the answer, no second request") {
    Script s{{fails(Failure::network), 7},
             tl::make_unexpected(ProbeError{Failure::auth, "pw", ""})};
    CHECK(s.run(true, later()).error().kind == Failure::auth);
    CHECK(s.requests == 1);
  }
}

TEST_CASE("which failures break a connection", "[probe][lease]") {
  CHECK(probe::breaks_connection({Failure::network, "", ""}));
  CHECK(probe::breaks_connection({Failure::timeout, "", ""}));
  CHECK(probe::breaks_connection({Failure::protocol, "", ""}));
  CHECK(probe::breaks_connection({Failure::not_ready, "", ""}));
  CHECK_FALSE(probe::breaks_connection({Failure::auth, "", ""}));
  CHECK_FALSE(probe::breaks_connection({Failure::saturated, "", ""}));
}
