#include "replica_lag.hpp"

#include <util/duration.hpp>
#include <util/format.hpp>

#include <algorithm>

namespace dbcheck::core {

LagEstimate estimate_lag(const LagEvidence& e) {
  using util::format_seconds;
  if (e.primary_sampled && e.caught_up_after_s) {
    const double s = std::max(0.0, *e.caught_up_after_s);
    return {s, util::format("{} sampled {} earlier", e.caught_up_phrase, format_seconds(s))};
  }
  const std::string why_no_sample =
      e.primary_sampled
          ? util::format("{} after {}", e.behind_phrase,
                         format_seconds(e.behind_for_s.value_or(0.0)))
          : util::format("primary not sampled ({})",
                         e.primary_problem.empty() ? "no leader known" : e.primary_problem);
  if (e.since_last_replay_s && *e.since_last_replay_s < 0) {
    // The replica's clock is behind the primary's: the age proves nothing, in either direction.
    return {std::nullopt,
            util::format("{}; the last replayed commit is dated {} in the replica's future "
                         "(clock skew between primary and replica)",
                         why_no_sample, format_seconds(-*e.since_last_replay_s))};
  }
  if (e.since_last_replay_s) {
    // The replica's data was current when its last replayed commit happened on the primary.
    const double s = std::max(0.0, *e.since_last_replay_s);
    return {s,
            util::format("{}; last replayed commit was {} ago", why_no_sample, format_seconds(s))};
  }
  return {std::nullopt, util::format("{}; {}", why_no_sample, e.no_fallback_phrase)};
}

} // namespace dbcheck::core
