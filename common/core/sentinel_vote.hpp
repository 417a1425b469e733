#pragma once
// Counting Sentinels: a strict majority of the *configured* Sentinels must name the same master.
//
// Why configured, not answering: a lone Sentinel partitioned with a stale master would
// otherwise be "all of those that answered". Why exact host:port: 10.0.0.1 is not 10.0.0.10,
// and a second instance on the same host is another node.

#include "probe_error.hpp"
#include "redis_replies.hpp"

#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <optional>
#include <string>
#include <vector>

namespace dbcheck::core {

// One configured Sentinel and what it said (or why it said nothing).
struct SentinelAnswer {
  util::HostPort sentinel;
  tl::expected<SentinelView, ProbeError> view;
};

// The count over all configured Sentinels.
struct SentinelTally {
  std::size_t configured = 0;
  std::size_t needed = 0;                 // configured / 2 + 1
  std::optional<util::HostPort> majority; // named by at least `needed` settled Sentinels
  std::size_t majority_votes = 0;
  std::string detail;                    // who said what, for reasons and explain
  std::optional<Failure> common_failure; // every Sentinel failed the same way (e.g. timeout)
};

// --- Interface ---

// Counts the answers; Sentinels that failed, answered nil, or see the master o_down or mid-
// failover count for no one. `configured` is the number of Sentinels in the configuration.
SentinelTally tally_sentinels(const std::vector<SentinelAnswer>& answers, std::size_t configured);

// How many settled Sentinels name exactly `node`.
std::size_t votes_for(const std::vector<SentinelAnswer>& answers, const util::HostPort& node);

} // namespace dbcheck::core
