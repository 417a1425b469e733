#include "redis_check.hpp"

#include "async.hpp"
#include "redis_link.hpp"

#include <core/redis_verdict.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace dbcheck::probe {
namespace {

using core::ProbeError;
using core::RespValue;
using namespace std::chrono_literals;

struct SentinelResult {
  core::SentinelAnswer answer;
  core::Step step;
};

// True for an error reply that means "this server does not know that spelling" (Valkey may
// one day drop the MASTER spellings; an ACL may grant only one of them).
bool unknown_spelling(const RespValue& r) {
  return r.type == RespValue::Type::error &&
         (r.str.find("nknown") != std::string::npos || r.str.rfind("NOPERM", 0) == 0);
}

// Asks one Sentinel for the master's address, flags and config epoch. Valkey 8 renamed the
// commands (GET-PRIMARY-ADDR-BY-NAME, PRIMARY); the old names still work there, and the new
// ones are tried when a server rejects the old.
SentinelResult ask_sentinel(const config::RedisCluster& cluster, const util::HostPort& sentinel,
                            const Deadline& deadline, ConnectionCache* cache) {
  SentinelResult r{{sentinel, tl::make_unexpected(ProbeError{})}, {}};
  r.step.opinion = "manager";
  r.step.peer = util::to_string(sentinel);
  r.step.asked =
      fmt::format("SENTINEL GET-MASTER-ADDR-BY-NAME {0}; SENTINEL MASTER {0}", cluster.master_name);
  const auto t0 = Clock::now();
  const auto finish = [&](tl::expected<core::SentinelView, ProbeError> view) {
    r.step.latency_ms = elapsed_ms(t0, Clock::now());
    if (view) {
      r.step.answer =
          fmt::format("master {}, flags {}, config-epoch {}",
                      view->master ? util::to_string(*view->master) : std::string{"unknown (nil)"},
                      view->flags, view->config_epoch ? std::to_string(*view->config_epoch) : "?");
    } else {
      r.step.answer = view.error().detail;
    }
    r.answer.view = std::move(view);
    return r;
  };

  RedisLease link(cache, sentinel);
  if (auto opened = link.open(deadline); !opened) {
    return finish(tl::make_unexpected(opened.error()));
  }
  std::vector<RedisCommand> cmds =
      auth_command(cluster.sentinel_user.value_or(""), cluster.sentinel_password.reveal());
  const std::size_t first = cmds.size();
  cmds.push_back({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", cluster.master_name});
  cmds.push_back({"SENTINEL", "MASTER", cluster.master_name});
  auto replies = link.pipeline(cmds, deadline);
  if (!replies) {
    return finish(tl::make_unexpected(replies.error()));
  }
  if (first == 1 && (*replies)[0].type == RespValue::Type::error) {
    return finish(tl::make_unexpected(core::classify_redis_error((*replies)[0].str)));
  }
  if (unknown_spelling((*replies)[first])) {
    r.step.asked += " (then the PRIMARY spellings)";
    auto again = link.pipeline({{"SENTINEL", "GET-PRIMARY-ADDR-BY-NAME", cluster.master_name},
                                {"SENTINEL", "PRIMARY", cluster.master_name}},
                               deadline);
    if (!again) {
      return finish(tl::make_unexpected(again.error()));
    }
    (*replies)[first] = (*again)[0];
    (*replies)[first + 1] = (*again)[1];
  }
  auto addr = core::parse_master_addr((*replies)[first]);
  if (!addr) {
    return finish(tl::make_unexpected(addr.error()));
  }
  core::SentinelView view;
  if (*addr) {
    // An unknown master name answers nil above and an error here: only read MASTER if known.
    auto master = core::parse_sentinel_master((*replies)[first + 1]);
    if (!master) {
      return finish(tl::make_unexpected(master.error()));
    }
    view = std::move(*master);
  }
  view.master = *addr;
  return finish(std::move(view));
}

std::vector<std::future<SentinelResult>>
ask_all_sentinels(const config::RedisCluster& cluster, const Deadline& deadline,
                  const std::shared_ptr<ConnectionCache>& cache) {
  std::vector<std::future<SentinelResult>> futures;
  for (const auto& s : cluster.sentinels) {
    // Each thread holds the cache: one abandoned at the deadline may give its link back late.
    futures.push_back(spawn(
        [cluster, s, deadline, cache] { return ask_sentinel(cluster, s, deadline, cache.get()); }));
  }
  return futures;
}

std::vector<core::SentinelAnswer> collect(std::vector<std::future<SentinelResult>>& futures,
                                          const config::RedisCluster& cluster,
                                          const Deadline& deadline, core::Report& report) {
  std::vector<core::SentinelAnswer> answers;
  for (std::size_t i = 0; i < futures.size(); ++i) {
    if (futures[i].wait_until(deadline.at() + k_grace) == std::future_status::ready) {
      SentinelResult r = futures[i].get();
      answers.push_back(std::move(r.answer));
      report.steps.push_back(std::move(r.step));
    } else {
      answers.push_back({cluster.sentinels[i],
                         tl::make_unexpected(ProbeError{
                             core::Failure::timeout,
                             "timeout: the Sentinel query did not finish by the deadline", ""})});
    }
  }
  return answers;
}

// AUTH (if configured), ROLE and PING on a data node: the node's own opinion.
struct NodeAnswer {
  tl::expected<core::RedisRole, ProbeError> role;
  Clock::time_point at;
};

std::vector<RedisCommand> node_commands(const config::RedisCluster& cluster) {
  std::vector<RedisCommand> cmds =
      auth_command(cluster.user.value_or(""), cluster.password.reveal());
  cmds.push_back({"ROLE"});
  cmds.push_back({"PING"});
  return cmds;
}

NodeAnswer ask_node(RedisLease& link, const std::vector<RedisCommand>& cmds,
                    const Deadline& deadline) {
  auto replies = link.pipeline(cmds, deadline);
  const auto at = Clock::now();
  if (!replies) {
    return {tl::make_unexpected(replies.error()), at};
  }
  const std::size_t first = cmds.size() - 2;
  if (first == 1 && (*replies)[0].type == RespValue::Type::error) {
    return {tl::make_unexpected(core::classify_redis_error((*replies)[0].str)), at};
  }
  auto role = core::parse_role((*replies)[first]);
  if (!role) {
    return {tl::make_unexpected(role.error()), at};
  }
  if (auto ping = core::parse_ping((*replies)[first + 1]); !ping) {
    return {tl::make_unexpected(ping.error()), at};
  }
  return {std::move(*role), at};
}

core::Step node_step(const util::HostPort& node, const std::vector<RedisCommand>& cmds) {
  core::Step s;
  s.opinion = "node";
  s.peer = util::to_string(node);
  for (const auto& c : cmds) {
    s.asked += (s.asked.empty() ? "" : "; ") + redacted(c);
  }
  return s;
}

void finish_node_step(core::Step& step, const tl::expected<core::RedisRole, ProbeError>& role,
                      Clock::time_point t0) {
  step.latency_ms = elapsed_ms(t0, Clock::now());
  step.answer = role ? core::describe(*role) : role.error().detail;
}

// The master's replication offset, and when it was asked for (for the lag bound).
struct OffsetSample {
  std::optional<long long> offset;
  Clock::time_point sent{};
  std::string problem;
};

OffsetSample sample_master(const config::RedisCluster& cluster, const util::HostPort& master,
                           const Deadline& deadline, core::Report& report, ConnectionCache* cache) {
  OffsetSample s;
  const auto cmds = node_commands(cluster);
  core::Step step = node_step(master, cmds);
  step.opinion = "primary_sample";
  const auto t0 = Clock::now();
  RedisLease link(cache, master);
  const auto opened = link.open(deadline);
  tl::expected<core::RedisRole, ProbeError> role = tl::make_unexpected(ProbeError{});
  if (!opened) {
    role = tl::make_unexpected(opened.error());
  } else {
    s.sent = Clock::now();
    role = ask_node(link, cmds, deadline).role;
  }
  if (role && role->master) {
    s.offset = role->offset;
  } else {
    s.problem = fmt::format("master {}: {}", util::to_string(master),
                            role ? "ROLE does not say master" : role.error().detail);
  }
  finish_node_step(step, role, t0);
  report.steps.push_back(std::move(step));
  return s;
}

// ---------------------------------------------------------------- writer

core::Report check_writer(const config::RedisCluster& cluster, const config::Backend& backend,
                          const util::HostPort& node, const Deadline& deadline,
                          const std::shared_ptr<ConnectionCache>& cache) {
  auto sentinels = ask_all_sentinels(cluster, deadline, cache);
  const auto cmds = node_commands(cluster);
  core::Step nstep = node_step(node, cmds);
  const auto t0 = Clock::now();
  RedisLease link(cache.get(), node);
  const auto opened = link.open(deadline);
  tl::expected<core::RedisRole, ProbeError> role =
      opened ? ask_node(link, cmds, deadline).role : tl::make_unexpected(opened.error());
  finish_node_step(nstep, role, t0);

  core::Report report;
  core::RedisObservation obs{node,
                             collect(sentinels, cluster, deadline, report),
                             cluster.sentinels.size(),
                             std::move(role),
                             {}};
  report.steps.push_back(std::move(nstep));
  report.verdict = core::evaluate_redis_writer(obs, backend.on_saturation);
  return report;
}

// ---------------------------------------------------------------- replica

core::Report check_replica(const config::RedisCluster& cluster, const config::Backend& backend,
                           const util::HostPort& node, const Deadline& deadline,
                           const std::shared_ptr<ConnectionCache>& cache) {
  auto sentinels = ask_all_sentinels(cluster, deadline, cache);
  const auto cmds = node_commands(cluster);
  core::Step nstep = node_step(node, cmds);
  const auto t0 = Clock::now();
  RedisLease link(cache.get(), node);
  const auto opened = link.open(deadline); // meanwhile the Sentinels answer

  core::Report report;
  core::RedisObservation obs{node,
                             collect(sentinels, cluster, deadline, report),
                             cluster.sentinels.size(),
                             tl::make_unexpected(ProbeError{}),
                             {}};
  const core::SentinelTally tally = core::tally_sentinels(obs.sentinels, obs.configured_sentinels);

  // Sample the majority's master first, then read the replica: the order makes the bound sound.
  OffsetSample sample;
  if (tally.majority && !util::same_endpoint(*tally.majority, node)) {
    sample = sample_master(cluster, *tally.majority,
                           deadline.minus(reserve_for_last_step(deadline)), report, cache.get());
  } else {
    sample.problem = tally.majority ? "this node is the master" : "no Sentinel majority";
  }

  core::LagEvidence evidence;
  evidence.caught_up_phrase = "processed past the master's replication offset";
  evidence.behind_phrase = "still behind the master's replication offset";
  evidence.no_fallback_phrase = "Redis keeps no replay timestamp to bound it otherwise";
  evidence.primary_sampled = sample.offset.has_value();
  evidence.primary_problem = sample.problem;

  if (!opened) {
    obs.node_answer = tl::make_unexpected(opened.error());
  } else {
    NodeAnswer answer = ask_node(link, cmds, deadline);
    int polls = 1;
    // Under writes the replica may be a few milliseconds behind the sample: watch it catch up
    // while that can still bound the lag under max_lag, leaving time to decide before the
    // deadline.
    const Deadline poll_until{
        std::min(deadline.minus(15ms).at(),
                 sample.sent + std::chrono::duration_cast<Clock::duration>(backend.max_lag))};
    const std::vector<RedisCommand> role_only{{"ROLE"}};
    while (sample.offset && answer.role && !answer.role->master &&
           answer.role->link_state == "connected" && answer.role->offset < *sample.offset &&
           !poll_until.expired()) {
      std::this_thread::sleep_for(std::min<Clock::duration>(5ms, poll_until.remaining()));
      auto replies = link.pipeline(role_only, deadline);
      if (!replies) {
        break;
      }
      auto again = core::parse_role((*replies)[0]);
      if (!again) {
        break;
      }
      answer = {std::move(*again), Clock::now()};
      ++polls;
    }
    if (sample.offset && answer.role && !answer.role->master) {
      const double after = std::chrono::duration<double>(answer.at - sample.sent).count();
      if (answer.role->offset >= *sample.offset) {
        evidence.caught_up_after_s = after;
      } else {
        evidence.behind_for_s = after;
        evidence.behind_phrase =
            fmt::format("still {} bytes behind the master's replication offset",
                        *sample.offset - answer.role->offset);
      }
    }
    obs.node_answer = std::move(answer.role);
    if (polls > 1) {
      nstep.asked += fmt::format(" (ROLE polled {} times)", polls);
    }
  }
  finish_node_step(nstep, obs.node_answer, t0);
  report.steps.push_back(std::move(nstep));
  obs.lag = core::estimate_lag(evidence);
  report.lag = obs.lag;
  report.verdict =
      core::evaluate_redis_replica(obs, std::chrono::duration<double>(backend.max_lag).count());
  return report;
}

} // namespace

core::Report check_redis(const config::RedisCluster& cluster, const config::Backend& backend,
                         const util::HostPort& node, const Deadline& deadline,
                         const std::shared_ptr<ConnectionCache>& cache) {
  return backend.role == config::Role::primary
             ? check_writer(cluster, backend, node, deadline, cache)
             : check_replica(cluster, backend, node, deadline, cache);
}

core::SentinelTally sentinel_majority(const config::RedisCluster& cluster,
                                      const Deadline& deadline) {
  auto futures = ask_all_sentinels(cluster, deadline, nullptr);
  core::Report unused;
  return core::tally_sentinels(collect(futures, cluster, deadline, unused),
                               cluster.sentinels.size());
}

} // namespace dbcheck::probe
