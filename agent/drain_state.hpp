#pragma once
// Whether this agent drains its servers, and when it says "ready" again: the decision alone.
// The caller reads the drain file and the marker in state_dir, and acts on what update()
// returns (writes or removes the marker, logs), so this is pure and unit-tested like
// core::HealthTracker (tests/unit/test_agent_drain_state.cpp).

#include <probe/deadline.hpp>

#include <optional>
#include <string>

namespace dbcheck::agent {

// What changed at one tick, for the caller to act on.
struct DrainChange {
  bool started = false;       // our own drain began: write the marker, log
  bool ended = false;         // our own drain ended: the "ready" window opened, log
  bool forget_marker = false; // "ready" has been said long enough: remove the marker
};

class DrainState {
public:
  // --- Interface ---

  // At start-up: a marker left by this agent before a restart means its drain is still in
  // HAProxy; send "ready" for `ready_window` from `now` to undo it.
  void resume(bool marker_present, probe::Clock::time_point now,
              probe::Clock::duration ready_window);

  // One tick at `now`: `why` is the reason to drain (shutting down, the drain file), empty for
  // none. When a drain of our own ends, "ready" is sent for `ready_window`: only then, so an
  // operator's drain set through HAProxy's runtime API survives.
  DrainChange update(std::string why, probe::Clock::time_point now,
                     probe::Clock::duration ready_window);

  // True while draining.
  bool draining() const { return !m_reason.empty(); }
  // Why, while draining; empty otherwise.
  const std::string& reason() const { return m_reason; }
  // True while replies should lead with "ready".
  bool send_ready(probe::Clock::time_point now) const {
    return m_ready_until && now < *m_ready_until;
  }

private:
  std::string m_reason;
  std::optional<probe::Clock::time_point> m_ready_until;
};

} // namespace dbcheck::agent
