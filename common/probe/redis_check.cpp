#include "redis_check.hpp"

#include "catch_up.hpp"
#include "sentinel_client.hpp"

#include <core/redis_verdict.hpp>
#include <util/format.hpp>

#include <algorithm>

namespace dbcheck::probe {
namespace {

using core::ProbeError;
using core::RespValue;

// AUTH (if configured), ROLE and PING on a data node: the node's own opinion; a writer check
// adds the write probe.
struct NodeAnswer {
  tl::expected<core::RedisRole, ProbeError> role;
  Clock::time_point at;
  core::WriteProbe write{};
};

// The commands, and where ROLE's reply is among the replies (PING's follows, then the probe's).
struct NodeCommands {
  std::vector<RedisCommand> cmds;
  std::size_t role_at = 0;
  bool write_probe = false;
};

NodeCommands node_commands(const config::RedisCluster& cluster, bool write_probe = false) {
  NodeCommands n;
  n.cmds = auth_command(cluster.user.value_or(""), cluster.password.reveal());
  n.role_at = n.cmds.size();
  n.cmds.push_back({"ROLE"});
  n.cmds.push_back({"PING"});
  if (write_probe) {
    // A list push only onto an existing list: on the absent key it writes, replicates and
    // stores nothing, yet passes through every gate Redis puts before a write.
    n.cmds.push_back({"LPUSHX", core::k_write_probe_key, "1"});
    n.write_probe = true;
  }
  return n;
}

NodeAnswer ask_node(Peers& peers, RedisPeer& link, const NodeCommands& n,
                    const Deadline& deadline) {
  auto replies = link.pipeline(n.cmds, deadline);
  const auto at = peers.now();
  if (!replies) {
    return {tl::make_unexpected(replies.error()), at, {}};
  }
  if (n.role_at == 1 && (*replies)[0].type == RespValue::Type::error) {
    return {tl::make_unexpected(core::classify_redis_error((*replies)[0].str)), at, {}};
  }
  auto role = core::parse_role((*replies)[n.role_at]);
  if (!role) {
    return {tl::make_unexpected(role.error()), at, {}};
  }
  core::WriteProbe write;
  if (n.write_probe) {
    write = core::parse_write_probe((*replies)[n.role_at + 2]);
  }
  if (auto ping = core::parse_ping((*replies)[n.role_at + 1]); !ping) {
    if (ping.error().kind != core::Failure::unwritable) {
      return {tl::make_unexpected(ping.error()), at, {}};
    }
    // A master that cannot persist refuses PING with its writes: its role is still known.
    write = {core::WriteProbe::Outcome::refused, ping.error().detail};
  }
  return {std::move(*role), at, std::move(write)};
}

core::Step node_step(const util::HostPort& node, const config::RedisTls& tls,
                     const NodeCommands& n) {
  core::Step s;
  s.opinion = "node";
  s.peer = util::to_string(node) + (tls.enabled ? " (TLS)" : "");
  for (const auto& c : n.cmds) {
    s.asked += (s.asked.empty() ? "" : "; ") + redacted(c);
  }
  return s;
}

void finish_node_step(core::Step& step, const tl::expected<core::RedisRole, ProbeError>& role,
                      double latency_ms, const core::WriteProbe& write = {}) {
  step.latency_ms = latency_ms;
  step.answer = role ? core::describe(*role) : role.error().detail;
  if (role && write.outcome == core::WriteProbe::Outcome::accepted) {
    step.answer += "; the write probe was accepted";
  } else if (role && write.outcome != core::WriteProbe::Outcome::not_asked) {
    step.answer += "; the write probe was refused: " + write.detail;
  }
}

// The master's replication offset, and when it was asked for (for the lag bound).
struct OffsetSample {
  std::optional<long long> offset;
  Clock::time_point sent{};
  std::string problem;
};

OffsetSample sample_master(Peers& peers, const config::RedisCluster& cluster,
                           const util::HostPort& master, const Deadline& deadline,
                           core::Report& report) {
  OffsetSample s;
  const auto cmds = node_commands(cluster);
  core::Step step = node_step(master, cluster.tls, cmds);
  step.opinion = "primary_sample";
  const auto t0 = peers.now();
  const auto link = peers.redis(master, cluster.tls);
  const auto opened = link->open(deadline);
  if (opened) {
    s.sent = peers.now();
  }
  const auto role =
      opened ? ask_node(peers, *link, cmds, deadline).role
             : tl::expected<core::RedisRole, ProbeError>(tl::make_unexpected(opened.error()));
  if (role && role->master) {
    s.offset = role->offset;
  } else {
    s.problem = util::format("master {}: {}", util::to_string(master),
                             role ? "ROLE does not say master" : role.error().detail);
  }
  finish_node_step(step, role, elapsed_ms(t0, peers.now()));
  report.steps.push_back(std::move(step));
  return s;
}

// ---------------------------------------------------------------- writer

core::Report check_writer(const config::RedisCluster& cluster, const config::Backend& backend,
                          const util::HostPort& node, const Deadline& deadline,
                          const std::shared_ptr<Peers>& peers) {
  auto sentinels = ask_all_sentinels(peers, cluster, deadline);
  const auto cmds = node_commands(cluster, cluster.write_probe);
  core::Step nstep = node_step(node, cluster.tls, cmds);
  const auto t0 = peers->now();
  const auto link = peers->redis(node, cluster.tls);
  const auto opened = link->open(deadline);
  NodeAnswer answer = opened ? ask_node(*peers, *link, cmds, deadline)
                             : NodeAnswer{tl::make_unexpected(opened.error()), peers->now(), {}};
  finish_node_step(nstep, answer.role, elapsed_ms(t0, peers->now()), answer.write);

  core::Report report;
  report.node_answered = answer.role.has_value();
  std::vector<core::SentinelAnswer> answers =
      collect_sentinels(sentinels, cluster, deadline, report);
  NameBook book{*peers, node};
  resolve_masters(book, answers, deadline, report);
  core::RedisObservation obs{
      node, std::move(answers), cluster.sentinels.size(), std::move(answer.role), {}};
  obs.write = std::move(answer.write);
  report.steps.push_back(std::move(nstep));
  report.own = core::own_words(obs.node_answer);
  report.verdict = core::evaluate_redis_writer(obs, backend.on_saturation);
  report.manager_votes =
      core::ManagerVotes{cluster.sentinels.size(), core::votes_for(obs.sentinels, node),
                         core::dissenters(obs.sentinels, node)};
  return report;
}

// ---------------------------------------------------------------- replica

core::Report check_replica(const config::RedisCluster& cluster, const config::Backend& backend,
                           const util::HostPort& node, const Deadline& deadline,
                           const std::shared_ptr<Peers>& peers) {
  auto sentinels = ask_all_sentinels(peers, cluster, deadline);
  const auto cmds = node_commands(cluster);
  core::Step nstep = node_step(node, cluster.tls, cmds);
  const auto t0 = peers->now();
  const auto link = peers->redis(node, cluster.tls);
  const auto opened = link->open(deadline); // meanwhile the Sentinels answer
  // The node's own answer time is its connection and its first answer: the wait for the
  // Sentinels, the master's sample and the catch-up's pauses are not the node's.
  const double open_ms = elapsed_ms(t0, peers->now());

  core::Report report;
  std::vector<core::SentinelAnswer> answers =
      collect_sentinels(sentinels, cluster, deadline, report);
  NameBook book{*peers, node};
  resolve_masters(book, answers, deadline.minus(reserve_for_last_step(deadline, peers->now())),
                  report);
  const core::SentinelTally tally = core::tally_sentinels(answers, cluster.sentinels.size());

  // Sample the majority's master first, then read the replica: the order makes the bound sound.
  OffsetSample sample;
  if (tally.majority && !util::same_endpoint(*tally.majority, node)) {
    sample = sample_master(*peers, cluster, *tally.majority,
                           deadline.minus(reserve_for_last_step(deadline, peers->now())), report);
  } else {
    sample.problem = tally.majority ? "this node is the master" : "no Sentinel majority";
  }

  core::LagEvidence evidence;
  evidence.caught_up_phrase = "processed past the master's replication offset";
  evidence.behind_phrase = "still behind the master's replication offset";
  evidence.no_fallback_phrase = "Redis keeps no replay timestamp to bound it otherwise";
  evidence.primary_sampled = sample.offset.has_value();
  evidence.primary_problem = sample.problem;

  const auto asked_at = peers->now();
  NodeAnswer answer = opened ? ask_node(*peers, *link, cmds, deadline)
                             : NodeAnswer{tl::make_unexpected(opened.error()), peers->now(), {}};
  const double node_ms = open_ms + elapsed_ms(asked_at, answer.at);
  if (opened) {
    const std::vector<RedisCommand> role_only{{"ROLE"}};
    const int again = poll_catch_up(
        *peers, catch_up_until(deadline, sample.sent, backend.max_lag),
        [&] {
          return sample.offset && answer.role && !answer.role->master &&
                 answer.role->link_state == "connected" && answer.role->offset < *sample.offset;
        },
        [&] {
          auto replies = link->pipeline(role_only, deadline);
          auto role =
              replies
                  ? core::parse_role((*replies)[0])
                  : tl::expected<core::RedisRole, ProbeError>(tl::make_unexpected(replies.error()));
          if (role) {
            answer = {std::move(*role), peers->now()};
          }
          return role.has_value();
        });
    if (sample.offset && answer.role && !answer.role->master) {
      const bool caught_up = answer.role->offset >= *sample.offset;
      record_catch_up(evidence, sample.sent, answer.at, caught_up);
      if (!caught_up) {
        evidence.behind_phrase =
            util::format("still {} bytes behind the master's replication offset",
                         *sample.offset - answer.role->offset);
      }
    }
    if (again > 0) {
      nstep.asked += util::format(" (ROLE polled {} times)", 1 + again);
    }
  }
  finish_node_step(nstep, answer.role, node_ms);
  report.steps.push_back(std::move(nstep));
  report.node_answered = answer.role.has_value();
  if (answer.role && !answer.role->master) {
    // Sentinel's REPLICAOF carries the announced name: compare it as the Sentinels' is.
    if (auto step =
            book.look_up({answer.role->master_addr}, "the replica's master_host", deadline)) {
      report.steps.push_back(std::move(*step));
    }
    answer.role->master_addr = book.canonical(answer.role->master_addr);
  }
  report.own = core::own_words(answer.role);
  core::RedisObservation obs{node, std::move(answers), cluster.sentinels.size(),
                             std::move(answer.role), core::estimate_lag(evidence)};
  report.lag = obs.lag;
  report.verdict =
      core::evaluate_redis_replica(obs, std::chrono::duration<double>(backend.max_lag).count());
  return report;
}

// sentinel_answers(), through `peers`.
std::vector<core::SentinelAnswer> answers_through(const std::shared_ptr<Peers>& peers,
                                                  const config::RedisCluster& cluster,
                                                  const Deadline& deadline) {
  auto asked = ask_all_sentinels(peers, cluster, deadline);
  core::Report unused;
  return collect_sentinels(asked, cluster, deadline, unused);
}

} // namespace

core::Report check_redis(const config::RedisCluster& cluster, const config::Backend& backend,
                         const util::HostPort& node, const Deadline& deadline,
                         const std::shared_ptr<Peers>& peers) {
  return backend.role == config::Role::primary
             ? check_writer(cluster, backend, node, deadline, peers)
             : check_replica(cluster, backend, node, deadline, peers);
}

std::vector<core::SentinelAnswer> sentinel_answers(const config::RedisCluster& cluster,
                                                   const Deadline& deadline) {
  return answers_through(network_peers(nullptr), cluster, deadline);
}

SentinelSurvey survey_sentinels(const config::RedisCluster& cluster, const Deadline& deadline) {
  const auto peers = network_peers(nullptr);
  auto asked = ask_all_sentinels(peers, cluster, deadline);
  auto listed = ask_all_for_replicas(peers, cluster, deadline);
  core::Report unused;
  SentinelSurvey s;
  s.answers = collect_sentinels(asked, cluster, deadline, unused);
  s.listings = collect_replica_listings(listed, cluster, deadline);
  return s;
}

core::SentinelTally sentinel_majority(const config::RedisCluster& cluster,
                                      const Deadline& deadline) {
  return sentinel_majority(network_peers(nullptr), cluster, deadline);
}

core::SentinelTally sentinel_majority(const std::shared_ptr<Peers>& peers,
                                      const config::RedisCluster& cluster,
                                      const Deadline& deadline) {
  return core::tally_sentinels(answers_through(peers, cluster, deadline), cluster.sentinels.size());
}

} // namespace dbcheck::probe
