#include "dbcheck_catch.hpp"

#include <switchover/switchover.hpp>

using dbcheck::util::Duration;
namespace sw = dbcheck::switchover;

TEST_CASE(
    "a pause shorter than the timeout plus the release margin is refused, saying what to give",
    "[switchover]") {
  const Duration timeout{3'000};
  CHECK(sw::minimum_pause(timeout) == Duration{13'000});
  CHECK_FALSE(sw::pause_refused(Duration{13'000}, timeout));
  const auto why = sw::pause_refused(Duration{12'000}, timeout);
  REQUIRE(why);
  CHECK(*why == "--pause 12s is shorter than --timeout 3s plus the 10s margin for releasing the "
                "old master: the pause must outlive the switchover (give --pause 13s or more, or "
                "leave it out)");
}
