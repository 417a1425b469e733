#include "sentinel_client.hpp"

#include "async.hpp"
#include "opinion_wait.hpp"

#include <util/format.hpp>

namespace dbcheck::probe {
namespace {

using core::ProbeError;
using core::RespValue;

// True for an error reply that means "this server does not know that spelling" (Valkey may
// one day drop the MASTER spellings; an ACL may grant only one of them).
bool unknown_spelling(const RespValue& r) {
  return r.type == RespValue::Type::error &&
         (r.str.find("nknown") != std::string::npos || r.str.rfind("NOPERM", 0) == 0);
}

// Asks one Sentinel for the master's address, flags and config epoch. Valkey 8 renamed the
// commands (GET-PRIMARY-ADDR-BY-NAME, PRIMARY); the old names still work there, and the new
// ones are tried when a server rejects the old.
SentinelResult ask_sentinel(Peers& peers, const config::RedisCluster& cluster,
                            const util::HostPort& sentinel, const Deadline& deadline) {
  core::Step step;
  step.opinion = "manager";
  step.peer = util::to_string(sentinel) + (cluster.sentinel_tls.enabled ? " (TLS)" : "");
  step.asked = util::format("SENTINEL GET-MASTER-ADDR-BY-NAME {0}; SENTINEL MASTER {0}",
                            cluster.master_name);
  const auto t0 = peers.now();
  // Every path ends here, with the view or why there is none.
  const auto finish = [&](tl::expected<core::SentinelView, ProbeError> view) {
    step.latency_ms = elapsed_ms(t0, peers.now());
    if (view) {
      step.answer =
          util::format("master {}, flags {}, config-epoch {}",
                       view->master ? util::to_string(*view->master) : std::string{"unknown (nil)"},
                       view->flags, view->config_epoch ? std::to_string(*view->config_epoch) : "?");
    } else {
      step.answer = view.error().detail;
    }
    return SentinelResult{{sentinel, std::move(view)}, std::move(step)};
  };

  const auto link = peers.redis(sentinel, cluster.sentinel_tls);
  if (auto opened = link->open(deadline); !opened) {
    return finish(tl::make_unexpected(opened.error()));
  }
  std::vector<RedisCommand> cmds =
      auth_command(cluster.sentinel_user.value_or(""), cluster.sentinel_password.reveal());
  const std::size_t first = cmds.size();
  cmds.push_back({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", cluster.master_name});
  cmds.push_back({"SENTINEL", "MASTER", cluster.master_name});
  auto replies = link->pipeline(cmds, deadline);
  if (!replies) {
    return finish(tl::make_unexpected(replies.error()));
  }
  if (first == 1 && (*replies)[0].type == RespValue::Type::error) {
    return finish(tl::make_unexpected(core::classify_redis_error((*replies)[0].str)));
  }
  if (unknown_spelling((*replies)[first])) {
    step.asked += " (then the PRIMARY spellings)";
    auto again = link->pipeline({{"SENTINEL", "GET-PRIMARY-ADDR-BY-NAME", cluster.master_name},
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

// Asks one Sentinel which replicas of the master it lists. The status screen needs them; the
// checks never do (they ask each node itself), so this is asked only there.
core::ReplicaListing ask_replicas(Peers& peers, const config::RedisCluster& cluster,
                                  const util::HostPort& sentinel, const Deadline& deadline) {
  const auto fail = [&](ProbeError e, bool refused = false) {
    return core::ReplicaListing{sentinel, tl::make_unexpected(std::move(e)), refused};
  };
  const auto link = peers.redis(sentinel, cluster.sentinel_tls);
  if (auto opened = link->open(deadline); !opened) {
    return fail(opened.error());
  }
  std::vector<RedisCommand> cmds =
      auth_command(cluster.sentinel_user.value_or(""), cluster.sentinel_password.reveal());
  const std::size_t first = cmds.size();
  cmds.push_back({"SENTINEL", "REPLICAS", cluster.master_name});
  auto replies = link->pipeline(cmds, deadline);
  if (!replies) {
    return fail(replies.error());
  }
  if (first == 1 && (*replies)[0].type == RespValue::Type::error) {
    return fail(core::classify_redis_error((*replies)[0].str));
  }
  const RespValue& r = (*replies)[first];
  if (r.type == RespValue::Type::error) {
    return fail(core::classify_redis_error(r.str), r.str.rfind("NOPERM", 0) == 0);
  }
  if (r.type != RespValue::Type::array) {
    return fail({core::Failure::protocol, "malformed SENTINEL REPLICAS reply (not an array)", ""});
  }
  return {sentinel, core::parse_sentinel_replicas(r), false};
}

} // namespace

std::vector<std::future<core::ReplicaListing>>
ask_all_for_replicas(const std::shared_ptr<Peers>& peers, const config::RedisCluster& cluster,
                     const Deadline& deadline) {
  std::vector<std::future<core::ReplicaListing>> futures;
  for (const auto& s : cluster.sentinels) {
    futures.push_back(spawn(
        [cluster, s, deadline, peers] { return ask_replicas(*peers, cluster, s, deadline); }));
  }
  return futures;
}

std::vector<core::ReplicaListing>
collect_replica_listings(std::vector<std::future<core::ReplicaListing>>& asked,
                         const config::RedisCluster& cluster, const Deadline& deadline) {
  std::vector<core::ReplicaListing> listings;
  for (std::size_t i = 0; i < asked.size(); ++i) {
    if (std::optional<core::ReplicaListing> l = await_by(asked[i], deadline)) {
      listings.push_back(std::move(*l));
    } else {
      listings.push_back(
          {cluster.sentinels[i], tl::make_unexpected(not_finished("SENTINEL REPLICAS")), false});
    }
  }
  return listings;
}

std::vector<std::future<SentinelResult>> ask_all_sentinels(const std::shared_ptr<Peers>& peers,
                                                           const config::RedisCluster& cluster,
                                                           const Deadline& deadline) {
  std::vector<std::future<SentinelResult>> futures;
  for (const auto& s : cluster.sentinels) {
    // Each thread holds the peers: one abandoned at the deadline may give its link back late.
    futures.push_back(spawn(
        [cluster, s, deadline, peers] { return ask_sentinel(*peers, cluster, s, deadline); }));
  }
  return futures;
}

std::vector<core::SentinelAnswer> collect_sentinels(std::vector<std::future<SentinelResult>>& asked,
                                                    const config::RedisCluster& cluster,
                                                    const Deadline& deadline,
                                                    core::Report& report) {
  std::vector<core::SentinelAnswer> answers;
  for (std::size_t i = 0; i < asked.size(); ++i) {
    if (std::optional<SentinelResult> r = await_by(asked[i], deadline)) {
      answers.push_back(std::move(r->answer));
      report.steps.push_back(std::move(r->step));
    } else {
      answers.push_back(
          {cluster.sentinels[i], tl::make_unexpected(not_finished("the Sentinel query"))});
    }
  }
  return answers;
}

void resolve_masters(NameBook& book, std::vector<core::SentinelAnswer>& answers,
                     const Deadline& deadline, core::Report& report) {
  std::vector<util::HostPort> named;
  for (const auto& a : answers) {
    if (a.view && a.view->master) {
      named.push_back(*a.view->master);
    }
  }
  if (auto step = book.look_up(named, "the master's host name", deadline)) {
    report.steps.push_back(std::move(*step));
  }
  for (auto& a : answers) {
    if (!a.view || !a.view->master) {
      continue;
    }
    const util::HostPort master = *a.view->master;
    if (const std::string why = book.unresolved(master); !why.empty()) {
      a.view = tl::make_unexpected(core::ProbeError{
          core::Failure::network,
          util::format("names master {}, and {}", util::to_string(master), why), ""});
    } else {
      a.view->master = book.canonical(master);
    }
  }
}

} // namespace dbcheck::probe
