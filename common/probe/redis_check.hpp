#pragma once
// One Redis/Valkey + Sentinel check: every configured Sentinel and the node asked in parallel
// under one deadline, the observations handed to the pure core (core/redis_verdict.hpp).

#include "deadline.hpp"
#include "peers.hpp"

#include <config/config.hpp>
#include <core/report.hpp>
#include <core/sentinel_replicas.hpp>
#include <core/sentinel_vote.hpp>
#include <util/host_port.hpp>

#include <memory>
#include <vector>

namespace dbcheck::probe {

// What the Sentinels said for `dbcheck status`.
struct SentinelSurvey {
  std::vector<core::SentinelAnswer> answers;  // which master each names, in the configured order
  std::vector<core::ReplicaListing> listings; // which replicas each lists, in the same order
};

// --- Interface ---

// Checks `node` for `backend` of `cluster`; every step honours `deadline`. Fills the verdict,
// lag and steps of the report (run_check() fills the rest and bounds the whole). Everything
// beyond the check goes through `peers` (network_peers() in production).
core::Report check_redis(const config::RedisCluster& cluster, const config::Backend& backend,
                         const util::HostPort& node, const Deadline& deadline,
                         const std::shared_ptr<Peers>& peers);

// Every configured Sentinel asked (in parallel, with the check credentials) which master it
// names, with its flags and epoch, or why it did not answer.
std::vector<core::SentinelAnswer> sentinel_answers(const config::RedisCluster& cluster,
                                                   const Deadline& deadline);

// What `dbcheck status` asks of the Sentinels: each one's answer (as sentinel_answers()) and
// the replicas each lists (SENTINEL REPLICAS), all asked at once, by `deadline`.
SentinelSurvey survey_sentinels(const config::RedisCluster& cluster, const Deadline& deadline);

// sentinel_answers() counted as a writer check counts them: a strict majority of the
// configured ones.
core::SentinelTally sentinel_majority(const config::RedisCluster& cluster,
                                      const Deadline& deadline);

// sentinel_majority(), every Sentinel reached through `peers`.
core::SentinelTally sentinel_majority(const std::shared_ptr<Peers>& peers,
                                      const config::RedisCluster& cluster,
                                      const Deadline& deadline);

} // namespace dbcheck::probe
