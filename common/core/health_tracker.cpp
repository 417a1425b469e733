#include "health_tracker.hpp"

#include <util/format.hpp>

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

void HealthTracker::follow_manager(Named named, util::Duration now) {
  switch (named) {
  case Named::another:
    m_armed = true;
    m_move_from.reset();
    return;
  case Named::no_primary:
    m_armed = true; // demoted: it comes back by a promotion, as after a move (header)
    [[fallthrough]];
  case Named::this_node:
  case Named::nobody:
    if (m_armed && m_policy.interval.count() > 0) {
      if (!m_move_from || now - m_move_last > 2 * m_policy.interval) {
        m_move_from = now; // first, or after a gap (a frozen host): count again
      }
      m_move_last = now;
    }
    return;
  case Named::unknown:
    m_move_from.reset(); // the manager unread: the count starts again
    return;
  }
}

std::optional<util::Duration> HealthTracker::since_move() const {
  if (!m_armed || !m_move_from) {
    return std::nullopt;
  }
  return m_move_last - *m_move_from;
}

bool HealthTracker::falling() const {
  return m_started && m_reported.state == State::up && m_failures > 0 &&
         m_raw.failure != Failure::lag;
}

std::string_view to_string(PendingChange::Kind kind) {
  switch (kind) {
  case PendingChange::Kind::failing:
    return "failing";
  case PendingChange::Kind::recovering:
    return "recovering";
  case PendingChange::Kind::lagging:
    return "lagging";
  case PendingChange::Kind::none:
    break;
  }
  return "none";
}

PendingChange HealthTracker::pending() const {
  PendingChange p;
  if (!m_started) {
    return p;
  }
  if (m_reported.state == State::up && m_raw.failure == Failure::lag && m_lag_bad_since) {
    p.kind = PendingChange::Kind::lagging;
    p.lasted = m_last_now - *m_lag_bad_since;
    p.window = m_policy.lag_window;
  } else if (falling()) {
    p.kind = PendingChange::Kind::failing;
    p.rounds = m_failures;
    p.needed = m_policy.fall;
  } else if (m_reported.state == State::down && m_successes > 0) {
    p.kind = PendingChange::Kind::recovering;
    p.rounds = m_successes;
    p.needed = m_policy.rise;
  }
  return p;
}

Transition HealthTracker::observe(const Verdict& raw, util::Duration now) {
  m_raw = raw;
  m_last_now = now;
  const bool first = !m_started;
  const bool was_up = m_started && m_reported.state == State::up;

  if (m_policy.writer) {
    follow_manager(raw.named, now);
  }

  if (passes(raw)) {
    ++m_successes;
    m_failures = 0;
    m_lag_bad_since.reset();
    // A writer moved to may come in by time since the manager's move (header comment).
    const std::optional<util::Duration> since = since_move();
    const util::Duration needed = (m_policy.rise - 1) * m_policy.interval - m_policy.interval / 4;
    if (first || was_up || m_successes >= m_policy.rise || (since && *since >= needed)) {
      m_armed = false; // up: the move is over; a later outage rises on passes again
      m_move_from.reset();
      return set(State::up, raw.failure, raw.reason, now);
    }
    return set(State::down, m_reported.failure,
               since ? util::format("recovering, {} of {} passing rounds, or {} of {} since the "
                                    "manager stopped naming another node: {}",
                                    m_successes, m_policy.rise, seconds(*since), seconds(needed),
                                    raw.reason)
                     : util::format("recovering, {} of {} passing rounds: {}", m_successes,
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
                 util::format("lagging for {} of lag_window {}: {}", seconds(lasted),
                              seconds(m_policy.lag_window), raw.reason),
                 now);
    }
    ++m_failures;
    return set(State::down, Failure::lag,
               was_up || first ? util::format("lagging for {} (lag_window {}): {}", seconds(lasted),
                                              seconds(m_policy.lag_window), raw.reason)
                               : raw.reason,
               now);
  }
  m_lag_bad_since.reset();
  ++m_failures;
  // Hysteresis must never keep an old primary in the write pool, nor another cluster's node
  // in any pool: a system identifier does not change back, so waiting for fall only serves
  // another cluster's data for longer.
  const bool definite =
      (m_policy.writer && raw.failure == Failure::role) || raw.failure == Failure::identity;
  if (first || !was_up || definite || m_failures >= m_policy.fall) {
    return set(State::down, raw.failure, raw.reason, now);
  }
  return set(State::up, raw.failure,
             util::format("failing, {} of {} rounds: {}", m_failures, m_policy.fall, raw.reason),
             now);
}

} // namespace dbcheck::core
