#pragma once
// The Sentinels' opinion: every configured Sentinel asked at once which master it names, with
// its flags and config epoch (core/sentinel_vote.hpp counts them).

#include "deadline.hpp"
#include "name_book.hpp"
#include "peers.hpp"

#include <config/config.hpp>
#include <core/report.hpp>
#include <core/sentinel_replicas.hpp>
#include <core/sentinel_vote.hpp>

#include <future>
#include <memory>
#include <vector>

namespace dbcheck::probe {

// One Sentinel's answer and the step that reports it.
struct SentinelResult {
  core::SentinelAnswer answer;
  core::Step step;
};

// --- Interface ---

// Asks every Sentinel of `cluster` on its own thread, each bounded by `deadline`.
std::vector<std::future<SentinelResult>> ask_all_sentinels(const std::shared_ptr<Peers>& peers,
                                                           const config::RedisCluster& cluster,
                                                           const Deadline& deadline);

// The answers, in the configured order, waiting no longer than `deadline`: a Sentinel that did
// not answer by then counts as a timeout. Each answer's step goes to `report`.
std::vector<core::SentinelAnswer> collect_sentinels(std::vector<std::future<SentinelResult>>& asked,
                                                    const config::RedisCluster& cluster,
                                                    const Deadline& deadline, core::Report& report);

// Replaces the master host names in `answers` (Sentinel's announce-hostnames) by the one
// address each resolves to, by `deadline`. An answer whose name does not resolve to one address
// counts as a Sentinel that did not answer: it may or may not name this node. The lookups'
// step goes to `report`.
void resolve_masters(NameBook& book, std::vector<core::SentinelAnswer>& answers,
                     const Deadline& deadline, core::Report& report);

// Asks every Sentinel of `cluster` on its own thread which replicas it lists (SENTINEL
// REPLICAS), each bounded by `deadline`.
std::vector<std::future<core::ReplicaListing>>
ask_all_for_replicas(const std::shared_ptr<Peers>& peers, const config::RedisCluster& cluster,
                     const Deadline& deadline);

// The listings, in the configured order, waiting no longer than `deadline`: a Sentinel that
// did not answer by then counts as a timeout.
std::vector<core::ReplicaListing>
collect_replica_listings(std::vector<std::future<core::ReplicaListing>>& asked,
                         const config::RedisCluster& cluster, const Deadline& deadline);

} // namespace dbcheck::probe
