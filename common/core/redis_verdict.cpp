#include "redis_verdict.hpp"

#include <util/duration.hpp>
#include <util/format.hpp>

namespace dbcheck::core {
namespace {

// Sentinel reads INFO from every instance every 10 s (1 s during a failover): a role report
// this fresh, from a majority, is the node's own word over the manager's kept links.
constexpr long long k_role_report_max_age_ms = 12'000;

std::string addresses(const std::vector<util::HostPort>& hps) {
  std::string out;
  for (const auto& hp : hps) {
    out += (out.empty() ? "" : ", ") + util::to_string(hp);
  }
  return out;
}

// The failure class of the Sentinels that did not answer: theirs when they share one (all
// timed out), else network.
Failure failures_kind(const std::vector<SentinelAnswer>& answers) {
  std::optional<Failure> kind;
  for (const auto& a : answers) {
    if (!a.view) {
      kind = !kind || *kind == a.view.error().kind ? a.view.error().kind : Failure::network;
    }
  }
  return kind.value_or(Failure::network);
}

Opinion sentinel_writer_opinion(const RedisObservation& obs) {
  const SentinelTally t = tally_sentinels(obs.sentinels, obs.configured_sentinels);
  if (!t.failing_over.empty()) {
    // Sentinel promotes the replica before it announces the new master: from the moment any
    // Sentinel starts failing this master over, writes to it may be lost.
    return {false,
            util::format("Sentinel {} is failing the master over: no writer until the failover "
                         "ends ({})",
                         addresses(t.failing_over), t.detail),
            Failure::role};
  }
  if (const auto newer = newer_elsewhere(obs.sentinels, obs.node); !newer.empty()) {
    // The failover's leader announces the new master at once; the other Sentinels follow
    // within seconds. In between, a majority still names the old master while its writes are
    // already lost: a newer epoch anywhere outranks any count.
    return {false,
            util::format("Sentinel {} already names another master at a newer config epoch: the "
                         "others have not caught up, no writer here ({})",
                         addresses(newer), t.detail),
            Failure::role};
  }
  const std::size_t yes = votes_for(obs.sentinels, obs.node);
  if (yes >= t.needed) {
    Opinion o{true,
              util::format("{} of {} Sentinels name this node master (need {})", yes, t.configured,
                           t.needed),
              Failure::none};
    o.vouches_for_node =
        vouchers_for(obs.sentinels, obs.node, k_role_report_max_age_ms) >= t.needed;
    return o;
  }
  // A Sentinel that answered (another master, nil, o_down) is a definite "not this node"; only
  // failures to answer leave it open.
  const Failure kind =
      dissenters(obs.sentinels, obs.node) > 0 ? Failure::role : failures_kind(obs.sentinels);
  const std::string tally = util::format("{} of {} name this node master, need {} ({})", yes,
                                         t.configured, t.needed, t.detail);
  return {false,
          kind == Failure::role ? util::format("Sentinels: {}", tally)
                                : describe_failure("Sentinels", ProbeError{kind, tally, ""}),
          kind};
}

Opinion node_writer_opinion(const RedisObservation& obs) {
  if (!obs.node_answer) {
    return {false, describe_failure("Redis", obs.node_answer.error()),
            obs.node_answer.error().kind};
  }
  if (!obs.node_answer->master) {
    return {false, util::format("Redis ROLE says {}", describe(*obs.node_answer)), Failure::role};
  }
  switch (obs.write.outcome) {
  case WriteProbe::Outcome::refused:
    return {false,
            util::format("Redis ROLE says master but it refuses writes: {}", obs.write.detail),
            Failure::unwritable};
  case WriteProbe::Outcome::accepted:
    return {true, "Redis ROLE says master and it accepts writes", Failure::none};
  case WriteProbe::Outcome::unknown:
    // A probe the check user may not send knows nothing: the writer is judged as before.
    return {true,
            util::format("Redis ROLE says master (writes not probed: {}; grant +lpushx ~{} or "
                         "set write_probe = false)",
                         obs.write.detail, k_write_probe_key),
            Failure::none};
  case WriteProbe::Outcome::not_asked:
    break;
  }
  return {true, "Redis ROLE says master", Failure::none};
}

} // namespace

Verdict evaluate_redis_writer(const RedisObservation& obs, SaturationPolicy saturation) {
  return combine_writer_opinions(sentinel_writer_opinion(obs), node_writer_opinion(obs),
                                 saturation);
}

Verdict evaluate_redis_replica(const RedisObservation& obs, double max_lag_s) {
  if (!obs.node_answer) {
    return {State::down, obs.node_answer.error().kind,
            describe_failure("Redis", obs.node_answer.error())};
  }
  const RedisRole& role = *obs.node_answer;
  if (role.master) {
    return {State::down, Failure::role, "Redis ROLE says master, not a replica"};
  }
  const SentinelTally t = tally_sentinels(obs.sentinels, obs.configured_sentinels);
  if (!t.majority) {
    return {State::down, t.common_failure.value_or(Failure::role),
            util::format("Sentinels: no master is named by {} of {} ({})", t.needed, t.configured,
                         t.detail)};
  }
  if (!util::same_endpoint(role.master_addr, *t.majority)) {
    return {State::down, Failure::role,
            util::format("replicates from {}, but {} of {} Sentinels name {} master",
                         util::to_string(role.master_addr), t.majority_votes, t.configured,
                         util::to_string(*t.majority))};
  }
  if (role.link_state != "connected") {
    const std::string why = role.link_state == "sync"
                                ? "a full sync is in progress"
                                : "its link to the master is " + role.link_state;
    return {State::down, Failure::not_ready, util::format("replica not ready: {}", why)};
  }
  const std::string max_text = util::format_seconds(max_lag_s);
  if (!obs.lag.seconds) {
    return {State::down, Failure::lag,
            util::format("replica lag cannot be bounded: {}", obs.lag.derivation)};
  }
  const double lag = *obs.lag.seconds;
  if (lag > max_lag_s) {
    return {State::down, Failure::lag,
            util::format("replica lag {} > max_lag {} ({})", util::format_seconds(lag), max_text,
                         obs.lag.derivation)};
  }
  return {State::up, Failure::none,
          util::format("replica of {} (connected), lag <= {} (max_lag {}): {}",
                       util::to_string(*t.majority), util::format_seconds(lag), max_text,
                       obs.lag.derivation)};
}

} // namespace dbcheck::core
