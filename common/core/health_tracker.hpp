#pragma once
// The agent's own hysteresis (HAProxy's agent rise/fall is fixed at 1): pure, time passed in.
//
// Worked example, rise 3, fall 2, lag_window 5s, one round per second:
//   t=0 up        -> UP (the first round sets the state)
//   t=1 timeout   -> UP   (failing 1 of 2)
//   t=2 timeout   -> DOWN (2 consecutive failures)
//   t=3 up        -> DOWN (recovering 1 of 3)
//   t=5 up        -> UP   (3 consecutive passes)
// A replica over max_lag stays UP at reduced weight until the lag has lasted lag_window; a
// writer that the manager or the node itself says is not the primary goes DOWN at once, and so
// does any server whose node is another cluster's (identity).
//
// A writer's rise guards against two writers UP: the old writer's agent demotes at its first
// round after the manager stopped naming it, so the new one must not come in sooner than
// rise - 1 intervals after that. So once this agent has seen the manager name *another* node,
// it may also come in at a passing round once (rise - 1) x interval (less a quarter interval
// of jitter) has passed since the first round after that in which more than half of the
// configured members named this node or no one (Verdict::named): a leader key that expired,
// or a promotion still running, is time the old writer's agent already had. Time, not rounds:
// the prober's rounds come every fastinter while any backend of the node is falling, and a
// host frozen for a while comes back with its count stale (a gap over two intervals, or a
// round whose manager was unread, starts it again). Only after another node was seen, or, the
// DCS unread, every member's Patroni answered that it runs no primary (Named::no_primary:
// Patroni demoted this node, as it does once retry_timeout passes without failsafe_mode, and no
// one leads; such rounds count like rounds naming no one): a writer never moved from
// (restarted while named, frozen and named all along) keeps plain rise passes, and so does any
// outage once it is up again.
// rise 3, interval 1s, the old leader's Patroni killed:
//   t=0 down (Patroni names pg1 leader, not this node)    -> DOWN
//   t=1 down (Patroni names no leader)                    -> DOWN (0 s of 1.75 s since)
//   t=2 down (names this node; still in recovery)         -> DOWN (1 s of 1.75 s)
//   t=3 up                                                -> UP   (2 s since the key went)

#include "verdict.hpp"

#include <util/duration.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace dbcheck::core {

// How one backend's verdicts are damped.
struct TrackerPolicy {
  int rise = 3;                    // consecutive passing rounds to come back
  int fall = 2;                    // consecutive failing rounds to go down
  util::Duration lag_window{5000}; // lag failures this long before a replica leaves
  bool writer = false;             // a definite "not the primary" takes a writer down at once
  util::Duration interval{0};      // the agent's round interval; 0: writers rise on passes only
};

// What one observation did to the reported state.
struct Transition {
  bool changed = false;      // the reported state differs from before (or is the first one)
  std::optional<State> from; // nullopt for the first observation
  State to = State::down;
};

// Keeps the state reported for one backend from the raw verdict of each probe round.
// A change of the reported state under way, as data: the reason says the same in words, and
// /health shows this (an operator's tooling should not parse prose).
struct PendingChange {
  enum class Kind {
    none,       // the reported state is settled
    failing,    // up, failing: down after `needed` consecutive failing rounds (fall)
    recovering, // down, passing: up after `needed` consecutive passing rounds (rise)
    lagging,    // up, lagging: down once the lag has lasted `window` (time, not rounds)
  };
  Kind kind = Kind::none;
  int rounds = 0;           // failing or recovering: consecutive rounds so far
  int needed = 0;           // failing or recovering: rounds that complete the change
  util::Duration lasted{0}; // lagging: how long so far
  util::Duration window{0}; // lagging: lag_window
};

// "failing", "recovering", "lagging", "none".
std::string_view to_string(PendingChange::Kind kind);

class HealthTracker {
public:
  // --- Interface ---

  // A tracker with no state yet: the first observation sets it directly.
  explicit HealthTracker(TrackerPolicy policy);

  // Feeds the raw verdict of one round, observed at `now` (any monotonic origin); returns
  // whether the reported state changed.
  Transition observe(const Verdict& raw, util::Duration now);

  // The verdict to report: its state is damped; its reason says why (and any pending change).
  const Verdict& reported() const { return m_reported; }

  // The last round's own verdict, undamped.
  const Verdict& last_raw() const { return m_raw; }

  // True once at least one round was observed.
  bool started() const { return m_started; }

  // The change under way as of the last round, if any.
  PendingChange pending() const;

  // Consecutive passing / failing rounds so far (for /health and metrics).
  int successes() const { return m_successes; }
  int failures() const { return m_failures; }

  // Writers: time since the manager moved away from another node, as of the last round (none
  // when it was not seen naming another one since this writer was last up, or the count
  // started again).
  std::optional<util::Duration> since_move() const;

  // When the reported state last changed (the `now` of that observation).
  util::Duration changed_at() const { return m_changed_at; }

  // True while the reported state is up but failing, fewer than `fall` rounds so far (lag
  // excepted: its window is time, not rounds). The agent probes faster then (its fastinter),
  // so going down takes fall rounds, not fall intervals. Not while coming back: a writer's
  // `rise` rounds stay an interval apart, so the old writer's agent, which demotes at its
  // next round (at most an interval after the manager moved), is out before the new one is
  // in (HAProxy's fall 2 / rise 3 at one inter, the same arithmetic).
  bool falling() const;

private:
  Transition set(State state, Failure failure, std::string reason, util::Duration now);
  // Writers: follows whom the manager named (the rise rule in the header comment).
  void follow_manager(Named named, util::Duration now);

  TrackerPolicy m_policy;
  bool m_started = false;
  Verdict m_reported;
  Verdict m_raw;
  int m_successes = 0;
  int m_failures = 0;
  bool m_armed = false; // writers: saw the manager name another node since last up
  std::optional<util::Duration> m_move_from; // first round naming this node or no one since
  util::Duration m_move_last{0};             // the last such round
  std::optional<util::Duration> m_lag_bad_since;
  util::Duration m_changed_at{0};
  util::Duration m_last_now{0}; // the last round's `now`
};

} // namespace dbcheck::core
