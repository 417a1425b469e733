#include "redis_switchover_plan.hpp"

#include <util/format.hpp>

#include <fmt/ranges.h>

#include <algorithm>

namespace dbcheck::core {

tl::expected<RedisPlan, std::string> plan_redis_switchover(const RedisPlanInput& in) {
  RedisPlan plan;
  for (const auto& r : in.replicas) {
    if (replica_healthy(r)) {
      plan.eligible.push_back(util::to_string(r.addr));
      plan.eligible_addrs.push_back(r.addr);
    }
  }
  const std::string old = util::to_string(in.old_master);
  if (plan.eligible.empty()) {
    return tl::make_unexpected(
        "no healthy replica to promote (SENTINEL REPLICAS lists none with link ok)");
  }
  if (in.to) {
    const std::string to = util::to_string(*in.to);
    if (std::find(plan.eligible.begin(), plan.eligible.end(), to) == plan.eligible.end()) {
      return tl::make_unexpected(
          util::format("--to {} is not a healthy replica of {} (healthy: {})", to, old,
                       fmt::join(plan.eligible, ", ")));
    }
    if (plan.eligible.size() > 1) {
      return tl::make_unexpected(util::format(
          "--to {}: Sentinel picks the replica itself, and {} are eligible; give the others "
          "replica-priority 0 first",
          to, plan.eligible.size()));
    }
  }
  // What is left of the deadline plus the margin: the pause cannot end while the run (or the
  // release after it) still counts on it.
  plan.pause_ms = in.pause ? in.pause->count() : (in.remaining + in.pause_margin).count();
  plan.steps = {
      util::format("pause writes on {} (CLIENT PAUSE {} WRITE: held, not refused; the pause "
                   "outlives the deadline by at least {})",
                   old, plan.pause_ms, util::format_duration(in.pause_margin)),
      util::format("wait up to {} until {} processed {}'s replication stream up to its offset "
                   "once paused (ROLE); else unpause it, still the master, and stop",
                   util::format_duration(in.catch_up), fmt::join(plan.eligible, ", "), old),
      util::format("SENTINEL FAILOVER {} to a Sentinel of the majority naming {} (counted again "
                   "just before; Sentinel promotes one of: {})",
                   in.master_name, old, fmt::join(plan.eligible, ", ")),
      util::format("wait until {} of the {} Sentinels name the new master and it passes the "
                   "writer check",
                   in.needed, in.configured),
      util::format("make {} a replica of the new master (REPLICAOF)", old),
      util::format("CLIENT UNPAUSE on {}", old)};
  return plan;
}

std::vector<std::string> replicas_behind(long long master_offset,
                                         const std::vector<ReplicaProgress>& seen) {
  std::vector<std::string> behind;
  for (const auto& r : seen) {
    if (!r.role) {
      behind.push_back(util::format("{} not asked ({})", r.replica, r.role.error()));
    } else if (r.role->master) {
      behind.push_back(util::format("{} answers ROLE master", r.replica));
    } else if (r.role->offset < 0) {
      behind.push_back(
          util::format("{} has no link to a master ({})", r.replica, r.role->link_state));
    } else if (r.role->offset < master_offset) {
      behind.push_back(util::format("{} at offset {} of the master's {}", r.replica, r.role->offset,
                                    master_offset));
    }
  }
  return behind;
}

FailoverSent failover_sent_for(const RespValue& reply) {
  if (reply.type != RespValue::Type::error) {
    return FailoverSent::accepted;
  }
  // Unpausing the old master now would let it acknowledge writes the failover under way
  // discards when it demotes it: this reply must keep the pause, as a lost reply does.
  return classify_redis_error(reply.str).code == "INPROG" ? FailoverSent::in_progress
                                                          : FailoverSent::refused;
}

Release release_for(bool failover_sent, const std::optional<util::HostPort>& majority,
                    const util::HostPort& old) {
  const bool moved = majority && !util::same_endpoint(*majority, old);
  if (moved) {
    return {ReleaseAction::demote, majority};
  }
  // Not moved: the old master is still the only one a majority could name. Unless a FAILOVER
  // of ours may be under way, in which case the new master may simply not be named yet.
  return {failover_sent ? ReleaseAction::keep_looking : ReleaseAction::unpause, std::nullopt};
}

} // namespace dbcheck::core
