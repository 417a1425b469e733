#pragma once
// The two-opinion decisions for Redis/Valkey under Sentinel: pure functions, tabled in
// tests/unit/test_core_redis_verdict.cpp.

#include "redis_replies.hpp"
#include "replica_lag.hpp"
#include "sentinel_vote.hpp"
#include "verdict.hpp"
#include "writer_opinions.hpp"

#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <vector>

namespace dbcheck::core {

// Everything a Redis check saw: each Sentinel's answer and the node's.
struct RedisObservation {
  util::HostPort node;
  std::vector<SentinelAnswer> sentinels;
  std::size_t configured_sentinels = 0;
  tl::expected<RedisRole, ProbeError> node_answer; // AUTH + ROLE + PING, first failure wins
  LagEstimate lag;                                 // replicas only
  WriteProbe write{};                              // writers only: does it take writes
};

// --- Interface ---

// Writer: up only when a strict majority of the configured Sentinels name `node` (exact
// host:port, settled) AND the node's ROLE says master and PING is not LOADING. A node refusing
// clients ("max number of clients reached") with the majority's agreement follows `saturation`.
// A master whose write probe was refused (MISCONF, OOM, NOREPLICAS) is down, class unwritable:
// every write through it would fail, and only a down server fires HAProxy's alerts and backups.
Verdict evaluate_redis_writer(const RedisObservation& obs, SaturationPolicy saturation);

// Reader: up when ROLE says replica, linked ("connected") to the master a Sentinel majority
// names, and the lag bound is at most `max_lag_s`. Anything unknown is down.
Verdict evaluate_redis_replica(const RedisObservation& obs, double max_lag_s);

} // namespace dbcheck::core
