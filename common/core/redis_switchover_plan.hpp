#pragma once
// The Redis switchover's decisions, apart from the I/O that feeds them: which replicas may be
// promoted, how long the pause holds writes, the plan shown to the operator, whether those
// replicas have caught up with the paused master, what SENTINEL FAILOVER's reply means, and what
// to do with a paused old master when a run cannot go on. Pure: switchover/redis_switchover.cpp
// asks the Sentinels and the nodes, and acts on what these return.

#include "redis_replies.hpp"

#include <util/duration.hpp>
#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace dbcheck::core {

// What preflight saw, and what the operator asked for.
struct RedisPlanInput {
  std::string master_name;               // the Sentinels' name for the master
  util::HostPort old_master;             // named by the Sentinel majority, passes the check
  std::vector<SentinelReplica> replicas; // SENTINEL REPLICAS, as one Sentinel lists them
  std::optional<util::HostPort> to;      // --to: the replica that must be promoted
  std::optional<util::Duration> pause;   // --pause; none: remaining + pause_margin
  util::Duration remaining{0};           // what is left of the run's deadline (rounded up)
  util::Duration pause_margin{0};        // how long the pause outlives the deadline
  util::Duration catch_up{0};            // how long the replicas may take to catch up
  std::size_t needed = 0;                // Sentinel votes a new master needs
  std::size_t configured = 0;            // configured Sentinels
};

// What the switchover will do.
struct RedisPlan {
  std::vector<std::string> eligible; // healthy replicas ("host:port"), one Sentinel will promote
  std::vector<util::HostPort> eligible_addrs; // the same replicas, to ask them
  long long pause_ms = 0;                     // CLIENT PAUSE <pause_ms> WRITE
  std::vector<std::string> steps;             // the plan as the operator reads it
};

// What became of one SENTINEL FAILOVER.
enum class FailoverSent {
  refused, // an error reply but -INPROG, or it never left (no connection, AUTH failed)
  accepted,
  unknown,    // sent, and the reply never came: the Sentinel may have accepted it
  in_progress // -INPROG: this Sentinel is already failing the master over, so one may be under way
};

// After a failure once writes are paused: what to do with the old master.
enum class ReleaseAction {
  unpause,      // it is still the master and no failover was asked for: release it as it is
  demote,       // make it a replica of `target` (the master the majority names), then unpause
  keep_looking, // a failover may be under way (FailoverSent other than refused): wait, bounded,
                // for a new master
};

// The release decision and the master to follow when demoting.
struct Release {
  ReleaseAction action = ReleaseAction::keep_looking;
  std::optional<util::HostPort> target;
};

// What ROLE said on one eligible replica while it catches up, or why it could not be asked.
struct ReplicaProgress {
  std::string replica; // "host:port"
  tl::expected<RedisRole, std::string> role;
};

// --- Interface ---

// The plan, or why there is none (no healthy replica; --to not one of them, or not the only
// one, since Sentinel picks the replica itself).
tl::expected<RedisPlan, std::string> plan_redis_switchover(const RedisPlanInput& in);

// The replicas in `seen` that have not processed the old master's replication stream up to
// `master_offset`, each described with why ("10.0.0.2:6379 at offset 900 of the master's
// 1000"); empty once every one has. A replica that could not be asked, answers ROLE master or
// has no link to a master (offset -1) has not.
std::vector<std::string> replicas_behind(long long master_offset,
                                         const std::vector<ReplicaProgress>& seen);

// What SENTINEL FAILOVER's reply `reply` says: -INPROG is in_progress, as a failover already
// under way may demote the old master any moment; any other error (-NOGOODSLAVE, -ERR, ...)
// refused, since Sentinel started nothing; anything else accepted.
FailoverSent failover_sent_for(const RespValue& reply);

// What to do with the paused old master `old`, given whether a failover may be under way
// (SENTINEL FAILOVER accepted, its reply lost, or -INPROG) and the master the Sentinel majority
// names now (none: no majority).
// Never unpauses a node while another may be a master: without FAILOVER sent, a majority
// naming someone else means a failover not ours moved it.
Release release_for(bool failover_sent, const std::optional<util::HostPort>& majority,
                    const util::HostPort& old);

} // namespace dbcheck::core
