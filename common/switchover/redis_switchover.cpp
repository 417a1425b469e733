// The Redis switchover's phases (redis_switchover.hpp). Over ~350 lines on purpose: the
// RedisSwitchover class is one state machine (the phases and the release that undoes each),
// and its steps read best side by side.
#include "redis_switchover.hpp"

#include <core/redis_replies.hpp>
#include <core/redis_switchover_plan.hpp>
#include <probe/async.hpp>
#include <probe/redis_check.hpp>
#include <util/format.hpp>

#include <fmt/ranges.h>

#include <algorithm>
#include <future>

namespace dbcheck::switchover {

using namespace std::chrono_literals;
namespace {

using probe::auth_command;
using probe::Clock;
using probe::Deadline;
using probe::k_grace;
using probe::redacted;
using probe::RedisCommand;
using probe::sentinel_majority;
using probe::spawn;

tl::expected<core::RespValue, std::string>
redis_call(probe::Peers& peers, const util::HostPort& addr, const config::RedisTls& tls,
           const Operator& op, const RedisCommand& command, const Deadline& deadline) {
  auto link = peers.redis(addr, tls);
  if (auto opened = link->open(deadline); !opened) {
    return tl::make_unexpected(opened.error().detail);
  }
  auto commands = auth_command(op.user, op.password.reveal());
  const std::size_t n_auth = commands.size();
  commands.push_back(command);
  auto replies = link->pipeline(commands, deadline);
  if (!replies) {
    return tl::make_unexpected(replies.error().detail);
  }
  for (std::size_t i = 0; i < n_auth; ++i) {
    if ((*replies)[i].type == core::RespValue::Type::error) {
      return tl::make_unexpected("AUTH: " + (*replies)[i].str);
    }
  }
  const core::RespValue& last = replies->back();
  if (last.type == core::RespValue::Type::error) {
    const std::string name = command.size() > 1 ? command[0] + " " + command[1] : command.at(0);
    return tl::make_unexpected(util::format("{}: {}", name, last.str));
  }
  return last;
}

// What became of one SENTINEL FAILOVER.
enum class FailoverSent {
  refused, // an error reply, or it never left (no connection, AUTH failed): not accepted
  accepted,
  unknown // sent, and the reply never came: the Sentinel may have accepted it
};

struct FailoverReply {
  FailoverSent sent = FailoverSent::refused;
  std::string text;
};

// SENTINEL FAILOVER `master_name` on `sentinel`, AUTH first in its own round trip so that a
// lost reply can only mean a FAILOVER that may have been accepted.
FailoverReply ask_failover(probe::Peers& peers, const util::HostPort& sentinel,
                           const config::RedisTls& tls, const Operator& op,
                           const std::string& master_name, const Deadline& deadline) {
  auto link = peers.redis(sentinel, tls);
  if (auto opened = link->open(deadline); !opened) {
    return {FailoverSent::refused, opened.error().detail};
  }
  if (auto auth = auth_command(op.user, op.password.reveal()); !auth.empty()) {
    auto replies = link->pipeline(auth, deadline);
    if (!replies) {
      return {FailoverSent::refused, replies.error().detail};
    }
    if (replies->front().type == core::RespValue::Type::error) {
      return {FailoverSent::refused, "AUTH: " + replies->front().str};
    }
  }
  auto replies = link->pipeline({{"SENTINEL", "FAILOVER", master_name}}, deadline);
  if (!replies) {
    return {FailoverSent::unknown, replies.error().detail};
  }
  if (replies->front().type == core::RespValue::Type::error) {
    return {FailoverSent::refused, "SENTINEL FAILOVER: " + replies->front().str};
  }
  return {FailoverSent::accepted, "OK"};
}

// The configured Sentinels that each name `master` as a vote right now. Each is asked alone
// (sentinel_majority over that one Sentinel, so the check's own rules decide what counts as a
// vote: a settled answer naming exactly that address), all at once.
std::vector<util::HostPort> sentinels_naming(const std::shared_ptr<probe::Peers>& peers,
                                             const config::RedisCluster& c,
                                             const util::HostPort& master,
                                             const Deadline& deadline) {
  std::vector<std::future<core::SentinelTally>> futures;
  for (const auto& s : c.sentinels) {
    config::RedisCluster one = c;
    one.sentinels = {s};
    futures.push_back(
        spawn([peers, one, deadline] { return sentinel_majority(peers, one, deadline); }));
  }
  std::vector<util::HostPort> out;
  for (std::size_t i = 0; i < futures.size(); ++i) {
    if (futures[i].wait_until(deadline.at() + k_grace) != std::future_status::ready) {
      continue;
    }
    const core::SentinelTally t = futures[i].get();
    if (t.majority && util::same_endpoint(*t.majority, master)) {
      out.push_back(c.sentinels[i]);
    }
  }
  return out;
}

// One Redis switchover: the phases in order, and the release of the old master when it
// cannot go on.
class RedisSwitchover {
public:
  RedisSwitchover(const config::RedisCluster& c, const config::Cluster& cluster,
                  const SwitchoverOptions& options, Driver& d)
      : m_c(c), m_cluster(cluster), m_options(options), m_d(d) {}

  SwitchoverResult run() {
    if (auto failed = preflight()) {
      return *failed;
    }
    if (m_options.dry_run) {
      return m_d.finish();
    }
    if (m_d.interrupted()) {
      return m_d.fail(m_d.stop_reason("") + " before anything changed");
    }

    m_d.begin(SwitchoverPhase::pause,
              util::format("CLIENT PAUSE {} WRITE on {}", m_pause_ms, m_d.result.old_primary));
    m_paused_at = m_d.now();
    if (auto r = redis_call(*m_d.peers(), m_old, m_c.tls, m_op,
                            {"CLIENT", "PAUSE", std::to_string(m_pause_ms), "WRITE"}, m_d.step());
        !r) {
      return abort(r.error()); // the reply may be what was lost: release it anyway
    }
    m_d.end(util::format("writes held on {} for up to {}", m_d.result.old_primary,
                         util::format_duration(util::Duration{m_pause_ms})));

    if (auto failed = request()) {
      return *failed;
    }

    m_d.begin(SwitchoverPhase::confirm, "a Sentinel majority naming a new master that passes "
                                        "the writer check");
    util::HostPort fresh;
    std::string seen;
    const WaitEnd confirmed = wait_for(*m_d.peers(), m_d.deadline(), &m_d, [&] {
      // An answer cut short by the deadline itself says nothing: `seen` keeps the one before.
      const auto t = sentinel_majority(m_d.peers(), m_c, m_d.step());
      if (!t.majority || util::same_endpoint(*t.majority, m_old)) {
        seen = m_d.expired() && !seen.empty() ? seen : t.detail;
        return false;
      }
      const auto r = writer_check(m_d.peers(), m_cluster, *t.majority, m_d.step());
      seen = m_d.expired() && !seen.empty()
                 ? seen
                 : util::format("{} named by the majority: {}", util::to_string(*t.majority),
                                r.verdict.reason);
      fresh = *t.majority;
      return core::passes(r.verdict);
    });
    if (confirmed != WaitEnd::done) {
      return abort(
          m_d.stop_reason("no new master confirmed before the deadline (last: " + seen + ")"));
    }
    m_d.result.new_primary = util::to_string(fresh);
    m_d.end(m_d.result.new_primary + " is the master for the Sentinel majority and for itself");

    // The old master is demoted here rather than left to Sentinel: Sentinel's own
    // reconfiguration travels on its command link behind its hello PUBLISH, which CLIENT PAUSE
    // WRITE holds, so it would only happen when the pause runs out -- and the writes held
    // until then would meet a master, be acknowledged, and be lost with its resync.
    m_d.begin(SwitchoverPhase::demote,
              util::format("{} answering ROLE as a replica of {} (REPLICAOF {} {})",
                           m_d.result.old_primary, m_d.result.new_primary, fresh.host, fresh.port));
    if (auto r = make_replica(fresh, m_d.deadline(), &m_d); !r) {
      return abort(m_d.stop_reason(r.error()));
    }
    m_d.end(m_d.result.old_primary + " replicates from " + m_d.result.new_primary);

    // No interruption from here on: releasing a replica's writes is also what an abort does.
    m_d.begin(SwitchoverPhase::unpause, "CLIENT UNPAUSE on " + m_d.result.old_primary);
    if (auto r = unpause(); !r) {
      m_d.result.advice =
          util::format("CLIENT UNPAUSE on {} (a replica of {} now: safe); its "
                       "pause ends by itself in about {} s anyway",
                       m_d.result.old_primary, m_d.result.new_primary, pause_left_s());
      return m_d.fail(r.error());
    }
    m_d.end("held writes released (they now meet a replica and are refused: clients retry them)");
    return m_d.finish();
  }

private:
  // Checks the cluster and plans; a failure (nothing changed) as the result, else nullopt.
  std::optional<SwitchoverResult> preflight() {
    m_d.begin(SwitchoverPhase::preflight, "asking the Sentinels which master they name");
    for (const auto& s : m_c.sentinels) {
      if (auto why = not_an_ip(s, "sentinel"); !why.empty()) {
        return m_d.fail(util::format("[cluster.{}]: {}", m_c.name, why));
      }
    }
    if (m_options.to) {
      if (auto why = not_an_ip(*m_options.to, "--to"); !why.empty()) {
        return m_d.fail(why);
      }
    }
    if (m_options.pause) {
      if (auto why = pause_refused(*m_options.pause, m_options.timeout)) {
        return m_d.fail(*why);
      }
    }
    auto op_or = operator_of(m_c.operator_user, m_c.operator_password_file);
    if (!op_or) {
      return m_d.fail(op_or.error());
    }
    if (!*op_or) {
      return m_d.fail("set operator_user and operator_password_file in [cluster." + m_c.name +
                      "]: the check user may not pause writes or fail over (see `dbcheck "
                      "setup-sql redis-operator` and `sentinel-operator`)");
    }
    m_op = std::move(**op_or);
    const core::SentinelTally tally = sentinel_majority(m_d.peers(), m_c, m_d.step());
    if (!tally.majority) {
      return m_d.fail("no strict majority of the Sentinels names a master: " + tally.detail);
    }
    m_old = *tally.majority;
    m_d.result.old_primary = util::to_string(m_old);
    if (const auto r = writer_check(m_d.peers(), m_cluster, m_old, m_d.step());
        !core::passes(r.verdict)) {
      return m_d.fail(util::format("the current master {} does not pass the writer check: {}",
                                   m_d.result.old_primary, r.verdict.reason));
    }
    std::vector<core::SentinelReplica> replicas;
    std::string why_none;
    for (const auto& s : m_c.sentinels) {
      auto reply = redis_call(*m_d.peers(), s, m_c.sentinel_tls, m_op,
                              {"SENTINEL", "REPLICAS", m_c.master_name}, m_d.step());
      if (reply) {
        replicas = core::parse_sentinel_replicas(*reply);
        why_none.clear();
        break;
      }
      why_none +=
          util::format("{}{}: {}", why_none.empty() ? "" : "; ", util::to_string(s), reply.error());
    }
    if (!why_none.empty()) {
      return m_d.fail("no Sentinel listed the replicas: " + why_none);
    }
    core::RedisPlanInput in;
    in.master_name = m_c.master_name;
    in.old_master = m_old;
    in.replicas = std::move(replicas);
    in.to = m_options.to;
    in.pause = m_options.pause;
    in.remaining = std::chrono::ceil<util::Duration>(m_d.remaining());
    in.pause_margin = k_pause_margin;
    in.needed = tally.needed;
    in.configured = tally.configured;
    auto plan = core::plan_redis_switchover(in);
    if (!plan) {
      return m_d.fail(plan.error());
    }
    m_pause_ms = plan->pause_ms;
    m_d.result.plan = std::move(plan->steps);
    m_d.end(util::format("master {} (named by {} of {} Sentinels, passes the writer check); "
                         "healthy replicas: {}",
                         m_d.result.old_primary, tally.majority_votes, tally.configured,
                         fmt::join(plan->eligible, ", ")));
    return std::nullopt;
  }

  // SENTINEL FAILOVER, to Sentinels of the majority naming the old master just now; a
  // failure (after releasing the old master) as the result, else nullopt.
  std::optional<SwitchoverResult> request() {
    m_d.begin(SwitchoverPhase::request,
              util::format("a Sentinel of the majority naming {} accepting SENTINEL FAILOVER {}",
                           m_d.result.old_primary, m_c.master_name));
    const Deadline request_by{std::min(m_d.deadline().at(), m_d.now() + k_request)};
    std::string last_error;
    std::string accepted;
    const WaitEnd requested = wait_for(*m_d.peers(), request_by, &m_d, [&] {
      const auto t = sentinel_majority(m_d.peers(), m_c, m_d.step());
      if (!t.majority || !util::same_endpoint(*t.majority, m_old)) {
        last_error = util::format("no Sentinel majority names {} now ({})", m_d.result.old_primary,
                                  t.detail);
        return false;
      }
      const auto voters = sentinels_naming(m_d.peers(), m_c, m_old, m_d.step());
      if (voters.size() < t.needed) {
        last_error = util::format("asked one by one, {} of the Sentinels name {} (need {})",
                                  voters.size(), m_d.result.old_primary, t.needed);
        return false;
      }
      for (const auto& s : voters) {
        if (m_d.interrupted()) {
          return false;
        }
        const FailoverReply r =
            ask_failover(*m_d.peers(), s, m_c.sentinel_tls, m_op, m_c.master_name, m_d.step());
        if (r.sent == FailoverSent::accepted) {
          m_failover_sent = true;
          accepted = "accepted by " + util::to_string(s);
          return true;
        }
        if (r.sent == FailoverSent::unknown) {
          // Another Sentinel could start a second failover: go on as if it was accepted.
          m_failover_sent = true;
          accepted = util::format("sent to {}, no reply ({}): taken as accepted",
                                  util::to_string(s), r.text);
          return true;
        }
        last_error = util::to_string(s) + ": " + r.text;
      }
      return false;
    });
    if (requested != WaitEnd::done) {
      return abort(m_d.stop_reason("no Sentinel accepted the failover: " + last_error));
    }
    m_d.end(accepted);
    return std::nullopt;
  }

  // REPLICAOF `master` on the old master, then ROLE until it names `master` (by `by`; with a
  // driver, an interruption stops the wait).
  tl::expected<void, std::string> make_replica(const util::HostPort& master, const Deadline& by,
                                               Driver* driver) {
    probe::Peers& peers = *m_d.peers();
    if (auto r = redis_call(peers, m_old, m_c.tls, m_op,
                            {"REPLICAOF", master.host, std::to_string(master.port)},
                            step_within(peers, by));
        !r) {
      return tl::make_unexpected(
          util::format("REPLICAOF on {} failed: {}", m_d.result.old_primary, r.error()));
    }
    std::string seen;
    const WaitEnd demoted = wait_for(peers, by, driver, [&] {
      auto r = redis_call(peers, m_old, m_c.tls, m_op, {"ROLE"}, step_within(peers, by));
      if (!r) {
        seen = r.error();
        return false;
      }
      auto role = core::parse_role(*r);
      if (!role) {
        seen = role.error().detail;
        return false;
      }
      seen = core::describe(*role);
      return !role->master && util::same_endpoint(role->master_addr, master);
    });
    if (demoted != WaitEnd::done) {
      return tl::make_unexpected(
          util::format("{} did not become a replica of {} in time (last: {})",
                       m_d.result.old_primary, util::to_string(master), seen));
    }
    return {};
  }

  tl::expected<void, std::string> unpause() {
    if (auto r = redis_call(*m_d.peers(), m_old, m_c.tls, m_op, {"CLIENT", "UNPAUSE"},
                            Deadline{m_d.now() + k_unpause_budget});
        !r) {
      return tl::make_unexpected(r.error());
    }
    return {};
  }

  long long pause_left_s() const {
    return whole_seconds(m_paused_at + std::chrono::milliseconds{m_pause_ms} - m_d.now());
  }

  // Ends a run that cannot go on after the pause (`error`: why), releasing the old master so
  // that there are never two writable masters. While FAILOVER was not sent and the Sentinel
  // majority names it (or none), it is unpaused as it is. Otherwise only once it is a replica
  // of the master the majority names (looked for during k_release_budget: Sentinel may still
  // be switching); else it stays paused, and the result says what the operator must do.
  // Signals are not looked at here: the release is bounded and is what they ask for.
  SwitchoverResult abort(const std::string& error) {
    const Deadline by{m_d.now() + k_release_budget};
    std::optional<util::HostPort> target;
    std::string seen;
    bool unpause_as_is = false;
    wait_for(*m_d.peers(), by, nullptr, [&] {
      const auto t = sentinel_majority(m_d.peers(), m_c, step_within(*m_d.peers(), by));
      seen = t.detail;
      const core::Release r = core::release_for(m_failover_sent, t.majority, m_old);
      switch (r.action) {
      case core::ReleaseAction::unpause:
        unpause_as_is = true;
        return true;
      case core::ReleaseAction::demote:
        target = r.target;
        return true;
      case core::ReleaseAction::keep_looking:
        return false;
      }
      return false;
    });
    if (unpause_as_is) {
      return fail_unpaused(error, "still the master (SENTINEL FAILOVER was not sent)");
    }
    if (!target) {
      return leave_paused(error, "no Sentinel majority names a new master yet (" + seen + ")");
    }
    if (auto r = make_replica(*target, by, nullptr); !r) {
      return leave_paused(error, r.error());
    }
    return fail_unpaused(error, "demoted: a replica of " + util::to_string(*target) +
                                    ", the master the Sentinel majority names");
  }

  // Unpauses the old master (`state`: what it is now, which makes that safe) and fails.
  SwitchoverResult fail_unpaused(const std::string& error, const std::string& state) {
    if (auto r = unpause(); !r) {
      m_d.result.advice = util::format("CLIENT UNPAUSE on {} ({}: safe); its pause ends by itself "
                                       "in about {} s anyway",
                                       m_d.result.old_primary, state, pause_left_s());
      return m_d.fail(util::format("{}; {} is {}, but CLIENT UNPAUSE failed ({})", error,
                                   m_d.result.old_primary, state, r.error()));
    }
    return m_d.fail(
        util::format("{}; {} is {}; writes on it unpaused", error, m_d.result.old_primary, state));
  }

  // Fails leaving the old master paused on purpose (`why`), with what the operator must do.
  SwitchoverResult leave_paused(const std::string& error, const std::string& why) {
    const std::string& old = m_d.result.old_primary;
    m_d.result.left_paused = true;
    m_d.result.advice = util::format(
        "{0} is still paused and must not simply be unpaused: {1}, and unpausing a node that "
        "answers ROLE master could make two writable masters. Its pause ends by itself in "
        "about {2} s; before then: once a majority of the Sentinels names a new master "
        "(SENTINEL GET-MASTER-ADDR-BY-NAME {3}), run REPLICAOF <its ip> <its port> and then "
        "CLIENT UNPAUSE on {0}; if the majority still names {0} and no other node answers ROLE "
        "master, the failover did not happen: CLIENT UNPAUSE on {0}. To hold its writes longer "
        "meanwhile: CLIENT PAUSE <ms> WRITE on {0}",
        old,
        m_failover_sent ? "SENTINEL FAILOVER was accepted (or may have been)"
                        : "the Sentinel majority names another master",
        pause_left_s(), m_c.master_name);
    return m_d.fail(util::format("{}; {} LEFT PAUSED: {}", error, old, why));
  }

  const config::RedisCluster& m_c;
  const config::Cluster& m_cluster;
  const SwitchoverOptions& m_options;
  Driver& m_d;
  Operator m_op;
  util::HostPort m_old;
  long long m_pause_ms = 0;
  Clock::time_point m_paused_at;
  bool m_failover_sent = false; // accepted, or sent without a reply
};

} // namespace

SwitchoverResult redis_switchover(const config::RedisCluster& c, const config::Cluster& cluster,
                                  const SwitchoverOptions& options, Driver& d) {
  return RedisSwitchover(c, cluster, options, d).run();
}

} // namespace dbcheck::switchover
