#pragma once
// Replica staleness in seconds, as an honest upper bound (see docs/lag.md for the method).
//
// A replica alone cannot tell write silence from a broken stream: both look like "nothing new
// replayed". So the probe samples the primary's WAL position first and reads the replica's replay
// position after: if the replica has replayed past that sample, everything committed before the
// sample is visible on it, so its data is at most (replica answer time - sample send time) old.
// If it has not caught up, the only sound bound left is the age of the last replayed commit.

#include <optional>
#include <string>

namespace dbcheck::core {

// The timed observations a lag bound is derived from.
struct LagEvidence {
  // How the engine's positions read in the derivation text (PostgreSQL's by default).
  std::string caught_up_phrase = "replayed past the primary's WAL position";
  std::string behind_phrase = "replay still behind the primary's WAL position";
  std::string no_fallback_phrase = "no commit replayed since the replica started";

  bool primary_sampled = false; // the primary answered with its current position
  std::string primary_problem;  // why not, when it did not (for the derivation text)
  // Replica replayed past the sample: seconds from sending the sample query to the replica's
  // answer.
  std::optional<double> caught_up_after_s;
  // Sample taken but replay still behind it: seconds the probe watched it stay behind.
  std::optional<double> behind_for_s;
  // clock_timestamp() - pg_last_xact_replay_timestamp() on the replica; nullopt when no commit
  // was replayed since it started. Mixes the primary's and the replica's clocks.
  std::optional<double> since_last_replay_s;
};

// A replica's staleness bound and how it was obtained.
struct LagEstimate {
  std::optional<double> seconds; // upper bound on staleness; nullopt when none can be given
  std::string derivation;        // how the figure was obtained, for explain and reasons
};

// --- Interface ---

// Turns the evidence into the tightest sound upper bound, or "unknown" with the reason.
LagEstimate estimate_lag(const LagEvidence& evidence);

} // namespace dbcheck::core
