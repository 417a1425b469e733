#pragma once
// Watching a replica catch up with the primary's sample, the timed half of the lag bound
// (core/replica_lag.hpp, docs/lag.md). Both engines poll the same way; this is the one place
// the policy and its constants live.

#include "deadline.hpp"
#include "peers.hpp"

#include <core/replica_lag.hpp>
#include <util/duration.hpp>

#include <chrono>
#include <functional>

namespace dbcheck::probe {

// Left before the check's deadline to decide and report once the watching stops.
inline constexpr auto k_decide_margin = std::chrono::milliseconds{15};
// Between two reads of the replica's position.
inline constexpr auto k_catch_up_pause = std::chrono::milliseconds{5};

// --- Interface ---

// When to stop watching: the deadline less k_decide_margin, or once the sample sent at
// `sampled` is `max_lag` old (a catch-up after that could not bound the lag below max_lag).
Deadline catch_up_until(const Deadline& deadline, Clock::time_point sampled,
                        util::Duration max_lag);

// Under a write burst the replica may be a few milliseconds behind the sample: while
// `behind()` and `until` has not come on `peers`' clock, pauses k_catch_up_pause (never past
// `until`) and calls `read_again()` (false: the read failed, stop). Returns how many reads it
// made.
int poll_catch_up(Peers& peers, const Deadline& until, const std::function<bool()>& behind,
                  const std::function<bool()>& read_again);

// The timed evidence: the replica's answer at `answered` had (`caught_up`) or had not reached
// the sample sent at `sampled`.
void record_catch_up(core::LagEvidence& evidence, Clock::time_point sampled,
                     Clock::time_point answered, bool caught_up);

} // namespace dbcheck::probe
