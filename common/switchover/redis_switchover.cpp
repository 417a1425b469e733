// The Redis switchover's phases (redis_switchover.hpp): one state machine, the phases and the
// release that undoes them side by side; each question to a node or a Sentinel is an operation
// of redis_operator.hpp.
#include "redis_switchover.hpp"

#include "redis_operator.hpp"

#include <core/redis_switchover_plan.hpp>
#include <probe/redis_check.hpp>
#include <util/format.hpp>

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <optional>

namespace dbcheck::switchover {

using namespace std::chrono_literals;
namespace {

using core::FailoverSent;
using probe::Clock;
using probe::Deadline;
using probe::sentinel_majority;

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
              util::format("CLIENT PAUSE {} WRITE on {}, then {} at its replication offset",
                           m_pause_ms, m_d.result.old_primary, fmt::join(m_eligible_names, ", ")));
    m_paused_at = m_d.now();
    if (auto r = m_ops->pause(m_pause_ms, m_d.step()); !r) {
      return abort(r.error()); // the reply may be what was lost: release it anyway
    }
    auto caught_up = catch_up();
    if (!caught_up) {
      return abort(caught_up.error());
    }
    m_d.end(util::format("writes held on {} for up to {}; {}", m_d.result.old_primary,
                         util::format_duration(util::Duration{m_pause_ms}), *caught_up));

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
    if (auto r = m_ops->make_replica(fresh, m_d.deadline(), &m_d); !r) {
      return abort(m_d.stop_reason(r.error()));
    }
    m_d.end(m_d.result.old_primary + " replicates from " + m_d.result.new_primary);

    // No interruption from here on: releasing a replica's writes is also what an abort does.
    m_d.begin(SwitchoverPhase::unpause, "CLIENT UNPAUSE on " + m_d.result.old_primary);
    if (auto r = m_ops->unpause(); !r) {
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
    const core::SentinelTally tally = sentinel_majority(m_d.peers(), m_c, m_d.step());
    if (!tally.majority) {
      return m_d.fail("no strict majority of the Sentinels names a master: " + tally.detail);
    }
    m_old = *tally.majority;
    m_d.result.old_primary = util::to_string(m_old);
    m_ops.emplace(m_c, m_d, std::move(**op_or), m_old);
    if (const auto r = writer_check(m_d.peers(), m_cluster, m_old, m_d.step());
        !core::passes(r.verdict)) {
      return m_d.fail(util::format("the current master {} does not pass the writer check: {}",
                                   m_d.result.old_primary, r.verdict.reason));
    }
    auto replicas = m_ops->list_replicas();
    if (!replicas) {
      return m_d.fail(replicas.error());
    }
    core::RedisPlanInput in;
    in.master_name = m_c.master_name;
    in.old_master = m_old;
    in.replicas = std::move(*replicas);
    in.to = m_options.to;
    in.pause = m_options.pause;
    in.remaining = std::chrono::ceil<util::Duration>(m_d.remaining());
    in.pause_margin = k_pause_margin;
    in.catch_up = k_catch_up;
    in.needed = tally.needed;
    in.configured = tally.configured;
    auto plan = core::plan_redis_switchover(in);
    if (!plan) {
      return m_d.fail(plan.error());
    }
    m_pause_ms = plan->pause_ms;
    m_eligible = plan->eligible_addrs;
    m_eligible_names = plan->eligible;
    m_d.result.plan = std::move(plan->steps);
    m_d.end(util::format("master {} (named by {} of {} Sentinels, passes the writer check); "
                         "healthy replicas: {}",
                         m_d.result.old_primary, tally.majority_votes, tally.configured,
                         fmt::join(plan->eligible, ", ")));
    return std::nullopt;
  }

  // Waits until every replica Sentinel may promote has processed the paused old master's
  // replication stream up to the offset it stands at now: what it says once they have, or why
  // they did not (the run then ends before FAILOVER). Without this wait, writes acknowledged
  // just before the pause and not yet on the replica Sentinel promotes would be lost when the
  // old master resyncs from it. The offset read once is enough: CLIENT PAUSE WRITE holds
  // every write and also stops expiry and eviction, so every write the master acknowledged is
  // below it; the stream may still grow by the PING a master sends its replicas every
  // repl-ping-replica-period, which carries no data. ROLE gives both offsets (the master's
  // master_repl_offset, a replica's processed offset, slave_repl_offset in INFO) and is in
  // the operator's ACL already.
  tl::expected<std::string, std::string> catch_up() {
    const Deadline by{std::min(m_d.deadline().at(), m_d.now() + k_catch_up)};
    const auto master = m_ops->role(m_old, step_within(*m_d.peers(), by));
    if (!master) {
      return tl::make_unexpected(util::format("ROLE on {} (its replication offset) failed: {}",
                                              m_d.result.old_primary, master.error()));
    }
    if (!master->master) {
      return tl::make_unexpected(util::format("{} answers ROLE as {}, not as the master",
                                              m_d.result.old_primary, core::describe(*master)));
    }
    const Clock::time_point start = m_d.now();
    std::vector<std::string> behind;
    const WaitEnd caught_up = wait_every(*m_d.peers(), by, &m_d, k_catch_up_poll, [&] {
      std::vector<core::ReplicaProgress> seen;
      for (const auto& r : m_eligible) {
        seen.push_back({util::to_string(r), m_ops->role(r, step_within(*m_d.peers(), by))});
      }
      behind = core::replicas_behind(master->offset, seen);
      return behind.empty();
    });
    const double waited = std::chrono::duration<double>(m_d.now() - start).count();
    if (caught_up != WaitEnd::done) {
      return tl::make_unexpected(m_d.stop_reason(util::format(
          "not every replica Sentinel may promote reached {}'s replication offset {} after "
          "waiting {:.1f}s: {}; SENTINEL FAILOVER not sent, as promoting it could lose "
          "acknowledged writes",
          m_d.result.old_primary, master->offset, waited, fmt::join(behind, "; "))));
    }
    return util::format("{} at its replication offset {} (after {:.1f}s)",
                        fmt::join(m_eligible_names, ", "), master->offset, waited);
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
      const auto voters = m_ops->sentinels_naming(m_old, m_d.step());
      if (voters.size() < t.needed) {
        last_error = util::format("asked one by one, {} of the Sentinels name {} (need {})",
                                  voters.size(), m_d.result.old_primary, t.needed);
        return false;
      }
      for (const auto& s : voters) {
        if (m_d.interrupted()) {
          return false;
        }
        const FailoverReply r = m_ops->failover(s, m_d.step());
        switch (r.sent) {
        case FailoverSent::accepted:
          m_failover_sent = true;
          accepted = "accepted by " + util::to_string(s);
          return true;
        case FailoverSent::unknown:
          // Another Sentinel could start a second failover: go on as if it was accepted.
          m_failover_sent = true;
          accepted = util::format("sent to {}, no reply ({}): taken as accepted",
                                  util::to_string(s), r.text);
          return true;
        case FailoverSent::in_progress:
          // The failover under way will demote the old master: keep it paused and wait for
          // the new master, as after a lost reply, never asking another Sentinel for a second.
          m_failover_sent = true;
          m_failover_in_progress = true;
          accepted = util::format("{} answered {}: a failover of {} was already in progress, "
                                  "taken as accepted",
                                  util::to_string(s), r.text, m_d.result.old_primary);
          return true;
        case FailoverSent::refused:
          break;
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
    if (auto r = m_ops->make_replica(*target, by, nullptr); !r) {
      return leave_paused(error, r.error());
    }
    return fail_unpaused(error, "demoted: a replica of " + util::to_string(*target) +
                                    ", the master the Sentinel majority names");
  }

  // Unpauses the old master (`state`: what it is now, which makes that safe) and fails.
  SwitchoverResult fail_unpaused(const std::string& error, const std::string& state) {
    if (auto r = m_ops->unpause(); !r) {
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
        m_failover_in_progress ? "a failover of it was already in progress (SENTINEL "
                                 "FAILOVER answered -INPROG)"
        : m_failover_sent      ? "SENTINEL FAILOVER was accepted (or may have been)"
                               : "the Sentinel majority names another master",
        pause_left_s(), m_c.master_name);
    return m_d.fail(util::format("{}; {} LEFT PAUSED: {}", error, old, why));
  }

  const config::RedisCluster& m_c;
  const config::Cluster& m_cluster;
  const SwitchoverOptions& m_options;
  Driver& m_d;
  util::HostPort m_old;
  std::optional<RedisOperator> m_ops; // once preflight knows the operator and the old master
  long long m_pause_ms = 0;
  std::vector<util::HostPort> m_eligible;    // the replicas Sentinel may promote (the plan's)
  std::vector<std::string> m_eligible_names; // the same, as "host:port"
  Clock::time_point m_paused_at;
  bool m_failover_sent = false; // a failover may be under way: accepted, no reply, or -INPROG
  bool m_failover_in_progress = false; // -INPROG: the failover under way is not this run's
};

} // namespace

SwitchoverResult redis_switchover(const config::RedisCluster& c, const config::Cluster& cluster,
                                  const SwitchoverOptions& options, Driver& d) {
  return RedisSwitchover(c, cluster, options, d).run();
}

} // namespace dbcheck::switchover
