#pragma once
// Counting Sentinels: a strict majority of the *configured* Sentinels must name the same master.
//
// Why configured, not answering: a lone Sentinel partitioned with a stale master would
// otherwise be "all of those that answered". Why exact host:port: 10.0.0.1 is not 10.0.0.10,
// and a second instance on the same host is another node. Why distinct: a Sentinel listed or
// answering twice is still one vote (the configuration refuses duplicates; the count does not
// trust that).

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
  std::size_t configured = 0;             // distinct Sentinels: configured, or answering if more
  std::size_t needed = 0;                 // configured / 2 + 1
  std::optional<util::HostPort> majority; // named by at least `needed` settled Sentinels
  std::size_t majority_votes = 0;
  std::string detail;                       // who said what, for reasons and explain
  std::optional<Failure> common_failure;    // every Sentinel failed the same way (e.g. timeout)
  std::vector<util::HostPort> failing_over; // Sentinels failing the master over right now
};

// --- Interface ---

// Counts the answers; Sentinels that failed, answered nil, or see the master o_down or mid-
// failover count for no one; a Sentinel answering twice counts once. `configured` is the
// number of Sentinels in the configuration; more distinct answers than that raise the bar.
SentinelTally tally_sentinels(const std::vector<SentinelAnswer>& answers, std::size_t configured);

// How many distinct settled Sentinels name exactly `node`.
std::size_t votes_for(const std::vector<SentinelAnswer>& answers, const util::HostPort& node);

// How many distinct Sentinels answered but do not vote for `node`: they name another master,
// do not know the master name, or see it o_down or mid-failover (a definite "not now").
std::size_t dissenters(const std::vector<SentinelAnswer>& answers, const util::HostPort& node);

// The Sentinels that name another master than `node` at a config epoch newer than every
// epoch of those naming `node`: a failover already happened there and the others have not
// heard yet (Sentinels learn the new configuration from hello messages, every 2 s), so a
// majority naming `node` is stale. Answers without an epoch are left out of the comparison
// (the rule only ever takes a writer out); empty when no one names `node` with a known epoch.
std::vector<util::HostPort> newer_elsewhere(const std::vector<SentinelAnswer>& answers,
                                            const util::HostPort& node);

// How many distinct settled Sentinels name exactly `node` AND read ROLE master from it over
// their own link at most `max_info_age_ms` ago (Sentinel's INFO every 10 s): the node's own
// role as the manager saw it, for a node that refuses the check's connection.
std::size_t vouchers_for(const std::vector<SentinelAnswer>& answers, const util::HostPort& node,
                         long long max_info_age_ms);

} // namespace dbcheck::core
