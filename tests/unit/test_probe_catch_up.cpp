// The catch-up watch on its own (probe/catch_up.hpp), on a virtual clock.
#include "dbcheck_catch.hpp"
#include "fake_peers.hpp"

#include <probe/catch_up.hpp>

using namespace dbcheck;
using namespace std::chrono_literals;

TEST_CASE("the watch window: max_lag after the sample, or the deadline less the margin",
          "[probe][catch_up]") {
  const auto t = probe::Clock::now();
  const probe::Deadline far{t + 10s};
  CHECK(probe::catch_up_until(far, t, util::Duration{1000}).at() == t + 1s);
  const probe::Deadline near{t + 300ms};
  CHECK(probe::catch_up_until(near, t, util::Duration{1000}).at() ==
        t + 300ms - probe::k_decide_margin);
}

TEST_CASE("the watch reads until caught up, a failed read, or the window's end",
          "[probe][catch_up]") {
  testing::FakePeers clock;
  const auto start = clock.now();
  const probe::Deadline until{start + 50ms};
  int position = 0;
  SECTION("caught up after three reads") {
    const int reads = probe::poll_catch_up(
        clock, until, [&] { return position < 3; }, [&] { return ++position, true; });
    CHECK(reads == 3);
    CHECK(clock.now() - start == 3 * probe::k_catch_up_pause);
  }
  SECTION("a failed read stops it") {
    const int reads = probe::poll_catch_up(
        clock, until, [&] { return true; }, [&] { return ++position < 2; });
    CHECK(reads == 1);
    CHECK(position == 2);
  }
  SECTION("never past the window, the last pause shortened to fit") {
    const int reads = probe::poll_catch_up(
        clock, until, [&] { return true; }, [&] { return true; });
    CHECK(reads == 10);
    CHECK(clock.now() == until.at());
  }
  SECTION("nothing to watch: no read, no pause") {
    CHECK(probe::poll_catch_up(
              clock, until, [] { return false; }, [] { return true; }) == 0);
    CHECK(clock.sleeps() == 0);
  }
}

TEST_CASE("the timed evidence", "[probe][catch_up]") {
  const auto t = probe::Clock::now();
  core::LagEvidence e;
  probe::record_catch_up(e, t, t + 20ms, true);
  CHECK(e.caught_up_after_s == Approx(0.02));
  CHECK_FALSE(e.behind_for_s);
  core::LagEvidence b;
  probe::record_catch_up(b, t, t + 30ms, false);
  CHECK(b.behind_for_s == Approx(0.03));
  CHECK_FALSE(b.caught_up_after_s);
}
