#pragma once
// One absolute point in steady time that every step of a check must finish by.

#include <util/duration.hpp>

#include <algorithm>
#include <chrono>

namespace dbcheck::probe {

using Clock = std::chrono::steady_clock;

// An absolute time every step of one check must finish by.
class Deadline {
public:
  // --- Interface ---

  // A deadline at the absolute steady time `at`.
  explicit Deadline(Clock::time_point at) : m_at(at) {}

  // A deadline `budget` from now.
  static Deadline in(util::Duration budget) { return Deadline{Clock::now() + budget}; }

  // The absolute time.
  Clock::time_point at() const { return m_at; }

  // Time left, never negative.
  Clock::duration remaining() const {
    return std::max(Clock::duration::zero(), m_at - Clock::now());
  }

  // Time left in whole milliseconds, rounded up so a poll() never wakes early and spins.
  int remaining_ms() const {
    const auto left = remaining();
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return static_cast<int>(std::min<long long>(ms, 24LL * 3600 * 1000));
  }

  // True once the time has come.
  bool expired() const { return Clock::now() >= m_at; }

  // An earlier deadline: this one less `margin` (for a step that must leave time for another).
  Deadline minus(Clock::duration margin) const { return Deadline{m_at - margin}; }

private:
  Clock::time_point m_at;
};

// What a check keeps for its last step when an earlier step gets its own, earlier deadline: a
// quarter of the time left at `now`, at least 100 ms. Used so that a hung primary being sampled
// cannot starve the replica's own query (and take every healthy replica out with a reason that
// blames the replica). The checks pass Peers::now(), so a test's clock decides it too.
inline Clock::duration reserve_for_last_step(const Deadline& deadline, Clock::time_point now) {
  return std::max<Clock::duration>(std::chrono::milliseconds{100},
                                   std::max(Clock::duration::zero(), deadline.at() - now) / 4);
}

// reserve_for_last_step() at the steady clock's now.
inline Clock::duration reserve_for_last_step(const Deadline& deadline) {
  return reserve_for_last_step(deadline, Clock::now());
}

// Milliseconds between two steady time points, as a double for reporting.
inline double elapsed_ms(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

} // namespace dbcheck::probe
