// Which external checks write a syslog line (core/pass_log.hpp).
#include "dbcheck_catch.hpp"

#include <core/pass_log.hpp>

using namespace dbcheck;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t k_second = 1'000'000'000;
constexpr std::int64_t k_now = 1'800'000'000 * k_second;

core::Verdict verdict(core::State s, core::Failure f = core::Failure::none) {
  return core::Verdict{s, f, "why", core::Named::unknown};
}

core::LoggedLine logged(core::State s, core::Failure f, std::int64_t seconds_ago) {
  return core::LoggedLine{s, f, k_now - seconds_ago * k_second};
}

} // namespace

TEST_CASE("every failure is logged, a pass only when it tells something new", "[core][pass_log]") {
  const auto up = verdict(core::State::up);
  const auto down = verdict(core::State::down, core::Failure::role);
  const auto changes = core::PassLogging::changes;
  const auto same_up = logged(core::State::up, core::Failure::none, 5);
  // Failures: always, whatever came before.
  CHECK(core::should_log(down, std::nullopt, k_now, changes, 1h));
  CHECK(core::should_log(down, logged(core::State::down, core::Failure::role, 1), k_now, changes,
                         1h));
  // A pass like the last line, 5 s ago: not logged; under "all": logged.
  CHECK_FALSE(core::should_log(up, same_up, k_now, changes, 1h));
  CHECK(core::should_log(up, same_up, k_now, core::PassLogging::all, 1h));
  // Nothing known of the last line (first check, unreadable or corrupt file): logged.
  CHECK(core::should_log(up, std::nullopt, k_now, changes, 1h));
  // A transition with its cause: after a failure, or after a pass of another failure class
  // (a saturated node kept up), or another state.
  CHECK(
      core::should_log(up, logged(core::State::down, core::Failure::role, 5), k_now, changes, 1h));
  CHECK(core::should_log(up, logged(core::State::up, core::Failure::saturated, 5), k_now, changes,
                         1h));
  CHECK(core::should_log(verdict(core::State::up, core::Failure::saturated), same_up, k_now,
                         changes, 1h));
  CHECK(
      core::should_log(up, logged(core::State::drain, core::Failure::none, 5), k_now, changes, 1h));
  // A writer kept up but slower than max_latency: logged when it turns slow and when it stops.
  CHECK(
      core::should_log(verdict(core::State::up, core::Failure::slow), same_up, k_now, changes, 1h));
  CHECK(core::should_log(up, logged(core::State::up, core::Failure::slow, 5), k_now, changes, 1h));
}

TEST_CASE("a quiet pass is logged again after the heartbeat, or when time ran backwards",
          "[core][pass_log]") {
  const auto up = verdict(core::State::up);
  const auto changes = core::PassLogging::changes;
  CHECK_FALSE(
      core::should_log(up, logged(core::State::up, core::Failure::none, 3599), k_now, changes, 1h));
  CHECK(
      core::should_log(up, logged(core::State::up, core::Failure::none, 3600), k_now, changes, 1h));
  CHECK(core::should_log(up, logged(core::State::up, core::Failure::none, 86400), k_now, changes,
                         1h));
  // Dated in the future: the clock was set back, the record says nothing reliable.
  CHECK(core::should_log(up, logged(core::State::up, core::Failure::none, -1), k_now, changes, 1h));
  // No heartbeat at all.
  CHECK_FALSE(core::should_log(up, logged(core::State::up, core::Failure::none, 86400), k_now,
                               changes, 0ms));
}

TEST_CASE("each (backend, node) has its own record name, safe as a file name", "[core][pass_log]") {
  const std::string a = core::logged_line_key("pg_write", "10.0.0.1:5432");
  CHECK(a.size() == 5 + 16);
  CHECK(a.rfind("last-", 0) == 0);
  CHECK(a == core::logged_line_key("pg_write", "10.0.0.1:5432"));
  CHECK(a != core::logged_line_key("pg_read", "10.0.0.1:5432"));
  CHECK(a != core::logged_line_key("pg_write", "10.0.0.2:5432"));
  // The boundary between the names counts: ("ab", "c") is not ("a", "bc").
  CHECK(core::logged_line_key("ab", "c") != core::logged_line_key("a", "bc"));
  CHECK(core::logged_line_key("../../etc", "/x").find('/') == std::string::npos);
}
