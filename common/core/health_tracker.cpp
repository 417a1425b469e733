#include "health_tracker.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dbcheck::core {
namespace {

std::string seconds(util::Duration d) {
  return util::format_seconds(static_cast<double>(d.count()) / 1000.0);
}

} // namespace

HealthTracker::HealthTracker(TrackerPolicy policy) : m_policy(policy) {}

Transition HealthTracker::set(State state, Failure failure, std::string reason,
                              util::Duration now) {
  Transition t;
  t.to = state;
  if (m_started) {
    t.from = m_reported.state;
  }
  t.changed = !m_started || m_reported.state != state;
  if (t.changed) {
    m_changed_at = now;
  }
  m_reported = Verdict{state, failure, std::move(reason)};
  m_started = true;
  return t;
}

void HealthTracker::follow_manager(Named named) {
  switch (named) {
  case Named::another:
    m_armed = true;
    m_since_move = 0;
    return;
  case Named::this_node:
  case Named::nobody:
    if (m_armed) {
      m_since_move = std::min(m_since_move + 1, m_policy.rise); // bounded: only >= rise matters
    }
    return;
  case Named::unknown:
    m_since_move = 0; // the manager unread: the count starts again
    return;
  }
}

bool HealthTracker::falling() const {
  return m_started && m_reported.state == State::up && m_failures > 0 &&
         m_raw.failure != Failure::lag;
}

Transition HealthTracker::observe(const Verdict& raw, util::Duration now) {
  m_raw = raw;
  const bool first = !m_started;
  const bool was_up = m_started && m_reported.state == State::up;

  if (m_policy.writer) {
    follow_manager(raw.named);
  }

  if (passes(raw)) {
    ++m_successes;
    m_failures = 0;
    m_lag_bad_since.reset();
    // A writer moved to counts from the manager's move (header comment), at least its passes.
    const int since = rounds_since_move();
    const int rounds = std::max(m_successes, since);
    if (first || was_up || rounds >= m_policy.rise) {
      m_armed = false; // up: the move is over; a later outage rises on passes again
      m_since_move = 0;
      return set(State::up, raw.failure, raw.reason, now);
    }
    return set(State::down, m_reported.failure,
               since > m_successes
                   ? fmt::format("recovering, {} of {} rounds in which the manager named this "
                                 "node or none since it named another: {}",
                                 rounds, m_policy.rise, raw.reason)
                   : fmt::format("recovering, {} of {} passing rounds: {}", rounds,
                                 m_policy.rise, raw.reason),
               now);
  }

  m_successes = 0;
  if (raw.failure == Failure::lag) {
    // A lag burst is not a reason to reshuffle reads: only a sustained one is.
    if (!m_lag_bad_since) {
      m_lag_bad_since = now;
    }
    const util::Duration lasted = now - *m_lag_bad_since;
    if (was_up && lasted < m_policy.lag_window) {
      ++m_failures;
      return set(State::up, Failure::lag,
                 fmt::format("lagging for {} of lag_window {}: {}", seconds(lasted),
                             seconds(m_policy.lag_window), raw.reason),
                 now);
    }
    ++m_failures;
    return set(State::down, Failure::lag,
               was_up || first ? fmt::format("lagging for {} (lag_window {}): {}", seconds(lasted),
                                             seconds(m_policy.lag_window), raw.reason)
                               : raw.reason,
               now);
  }
  m_lag_bad_since.reset();
  ++m_failures;
  // Hysteresis must never keep an old primary in the write pool.
  const bool definite = m_policy.writer && raw.failure == Failure::role;
  if (first || !was_up || definite || m_failures >= m_policy.fall) {
    return set(State::down, raw.failure, raw.reason, now);
  }
  return set(State::up, raw.failure,
             fmt::format("failing, {} of {} rounds: {}", m_failures, m_policy.fall, raw.reason),
             now);
}

} // namespace dbcheck::core
