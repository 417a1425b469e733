#include "catch_up.hpp"

#include <algorithm>

namespace dbcheck::probe {

Deadline catch_up_until(const Deadline& deadline, Clock::time_point sampled,
                        util::Duration max_lag) {
  return Deadline{std::min(deadline.minus(k_decide_margin).at(),
                           sampled + std::chrono::duration_cast<Clock::duration>(max_lag))};
}

int poll_catch_up(Peers& peers, const Deadline& until, const std::function<bool()>& behind,
                  const std::function<bool()>& read_again) {
  int reads = 0;
  while (behind()) {
    const auto now = peers.now();
    if (now >= until.at()) {
      break;
    }
    peers.sleep_for(std::min<Clock::duration>(k_catch_up_pause, until.at() - now));
    if (!read_again()) {
      break;
    }
    ++reads;
  }
  return reads;
}

void record_catch_up(core::LagEvidence& evidence, Clock::time_point sampled,
                     Clock::time_point answered, bool caught_up) {
  const double after = std::chrono::duration<double>(answered - sampled).count();
  if (caught_up) {
    evidence.caught_up_after_s = after;
  } else {
    evidence.behind_for_s = after;
  }
}

} // namespace dbcheck::probe
