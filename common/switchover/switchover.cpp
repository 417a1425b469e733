#include "switchover.hpp"

#include <config/password_file.hpp>
#include <core/patroni_cluster.hpp>
#include <core/redis_replies.hpp>
#include <core/verdict.hpp>
#include <probe/async.hpp>
#include <probe/http_client.hpp>
#include <probe/pg_check.hpp>
#include <probe/redis_check.hpp>
#include <probe/redis_link.hpp>
#include <probe/run_check.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <future>
#include <thread>

namespace dbcheck::switchover {
namespace {

// The probe's tools this room drives a switchover with.
using probe::auth_command;
using probe::elapsed_ms;
using probe::get_all;
using probe::HttpCredentials;
using probe::HttpOptions;
using probe::HttpReply;
using probe::k_grace;
using probe::patroni_view;
using probe::post_json;
using probe::redacted;
using probe::RedisCommand;
using probe::RedisLink;
using probe::run_check;
using probe::sentinel_majority;
using probe::spawn;

using namespace std::chrono_literals;

constexpr auto k_poll = 200ms;             // between two looks while waiting
constexpr util::Duration k_step{2000};     // one question or one confirming check
constexpr util::Duration k_request{10000}; // Redis: Sentinels accepting SENTINEL FAILOVER
constexpr auto k_unpause_budget = 2000ms;  // one CLIENT UNPAUSE after a failure
// Redis, after a run stopped once FAILOVER may have been accepted: finding the master the
// Sentinel majority names, REPLICAOF on the old master, ROLE confirming it.
constexpr auto k_release_budget = 5000ms;
// How long the CLIENT PAUSE outlives the deadline. The pause is set once, long enough for
// the whole run and its release, rather than kept short and renewed:
// - a renewal must fire while a step blocks (a Sentinel or the writer check may take k_step),
//   so it needs a second thread sending CLIENT PAUSE beside the main one's REPLICAOF and
//   UNPAUSE, and a renewal landing after the final UNPAUSE would hold writes again;
// - the long pause costs nothing when the run ends normally or fails (it is unpaused or
//   deliberately left paused, explicitly), and if dbcheck is killed (SIGKILL) it still ends
//   by itself at a bounded time; a renewed one would merely end sooner, as a master, which
//   is the very danger a pause is there to avoid.
constexpr auto k_pause_margin = 10000ms;
static_assert(k_pause_margin >= k_release_budget + k_unpause_budget + 2000ms,
              "the pause must outlive the release that follows a missed deadline");

// The operator's credentials, read from their file only now (checks never read it).
struct Operator {
  std::string user;
  config::Secret password;
};

tl::expected<std::optional<Operator>, std::string>
operator_of(const std::optional<std::string>& user, const std::optional<std::string>& file) {
  if (!user && !file) {
    return std::nullopt;
  }
  if (!file) {
    return tl::make_unexpected("operator_user is set but operator_password_file is not");
  }
  auto secret = config::read_password_file(*file);
  if (!secret) {
    return tl::make_unexpected(secret.error());
  }
  return Operator{user.value_or(""), std::move(*secret)};
}

// A deadline for one step within `by`: k_step from now, never past `by`.
Deadline step_within(const Deadline& by) {
  return Deadline{std::min(by.at(), Clock::now() + k_step)};
}

// Tracks phases, times, progress events and interruptions, and builds the result.
class Driver {
public:
  Driver(const SwitchoverOptions& options, const SwitchoverProgress& progress)
      : m_progress(progress), m_interrupt(options.interrupted), m_start(Clock::now()),
        m_deadline(Deadline::in(options.timeout)) {}

  // The deadline of the whole switchover.
  const Deadline& deadline() const { return m_deadline; }
  // A deadline for one step: k_step from now, never past the whole one.
  Deadline step() const { return step_within(m_deadline); }
  void begin(SwitchoverPhase phase, const std::string& waits_for) {
    m_phase = phase;
    m_phase_start = Clock::now();
    m_open = true;
    emit(false, true, waits_for);
  }
  void end(const std::string& text) {
    record();
    emit(true, true, text);
  }
  // True once something asked the run to stop (asked again on each call until then).
  bool interrupted() {
    if (!result.interrupted_by && m_interrupt) {
      result.interrupted_by = m_interrupt();
    }
    return result.interrupted_by.has_value();
  }
  // "interrupted by SIGTERM" once interrupted, else `otherwise`.
  std::string stop_reason(const std::string& otherwise) const {
    return result.interrupted_by ? "interrupted by " + *result.interrupted_by : otherwise;
  }
  SwitchoverResult fail(const std::string& error) {
    if (m_open) {
      record();
    }
    result.failed = m_phase;
    result.error = error;
    emit(true, false, error);
    return finish();
  }
  SwitchoverResult finish() {
    result.ok = !result.failed;
    result.total_s = seconds_since(m_start);
    return result;
  }
  SwitchoverResult result;

private:
  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  void record() {
    result.phases.push_back({m_phase, seconds_since(m_phase_start)});
    m_open = false;
  }
  void emit(bool finished, bool ok, const std::string& text) {
    if (m_progress) {
      m_progress({m_phase, finished, ok, text, seconds_since(m_start)});
    }
  }
  const SwitchoverProgress& m_progress;
  const SwitchoverInterrupt& m_interrupt;
  Clock::time_point m_start;
  Deadline m_deadline;
  SwitchoverPhase m_phase = SwitchoverPhase::preflight;
  Clock::time_point m_phase_start;
  bool m_open = false; // a phase began and has not ended
};

// How a wait ended.
enum class WaitEnd { done, expired, interrupted };

// Polls `done` every k_poll until it returns true or `deadline` passes; with a driver, also
// stops as soon as the run is interrupted (looked at before each poll).
template <class Pred>
WaitEnd wait_for(const Deadline& deadline, Driver* driver, Pred&& done) {
  while (true) {
    if (driver != nullptr && driver->interrupted()) {
      return WaitEnd::interrupted;
    }
    if (done()) {
      return WaitEnd::done;
    }
    if (deadline.expired()) {
      return WaitEnd::expired;
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(k_poll, deadline.remaining()));
  }
}

// Both opinions on `node` as a writer of `cluster` (the check dbcheck runs for HAProxy).
core::Report writer_check(const config::Cluster& cluster, const util::HostPort& node,
                          const Deadline& within) {
  config::Backend b;
  b.name = "switchover";
  b.cluster = config::name_of(cluster);
  b.role = config::Role::primary;
  b.timeout = util::Duration{std::max<long long>(
      100, std::chrono::duration_cast<std::chrono::milliseconds>(within.remaining()).count())};
  return run_check(cluster, b, node, Clock::now());
}

long long whole_seconds(Clock::duration d) {
  return std::max<long long>(0, std::chrono::ceil<std::chrono::seconds>(d).count());
}

// ---------------------------------------------------------------- Redis

tl::expected<core::RespValue, std::string> redis_call(const util::HostPort& addr,
                                                      const Operator& op,
                                                      const RedisCommand& command,
                                                      const Deadline& deadline) {
  auto link = RedisLink::connect(addr, deadline);
  if (!link) {
    return tl::make_unexpected(link.error().detail);
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
    return tl::make_unexpected(fmt::format("{}: {}", name, last.str));
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
FailoverReply ask_failover(const util::HostPort& sentinel, const Operator& op,
                           const std::string& master_name, const Deadline& deadline) {
  auto link = RedisLink::connect(sentinel, deadline);
  if (!link) {
    return {FailoverSent::refused, link.error().detail};
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
std::vector<util::HostPort> sentinels_naming(const config::RedisCluster& c,
                                             const util::HostPort& master,
                                             const Deadline& deadline) {
  std::vector<std::future<core::SentinelTally>> futures;
  for (const auto& s : c.sentinels) {
    config::RedisCluster one = c;
    one.sentinels = {s};
    futures.push_back(spawn([one, deadline] { return sentinel_majority(one, deadline); }));
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

// One replica as a Sentinel lists it (SENTINEL REPLICAS: flat field/value arrays).
struct ReplicaInfo {
  util::HostPort addr;
  std::string flags;
  std::string link;
};

std::vector<ReplicaInfo> parse_replicas(const core::RespValue& reply) {
  std::vector<ReplicaInfo> out;
  for (const auto& entry : reply.elements) {
    ReplicaInfo r;
    std::string ip;
    std::string port;
    for (std::size_t i = 0; i + 1 < entry.elements.size(); i += 2) {
      const std::string& k = entry.elements[i].str;
      const std::string& v = entry.elements[i + 1].str;
      if (k == "ip") {
        ip = v;
      } else if (k == "port") {
        port = v;
      } else if (k == "flags") {
        r.flags = v;
      } else if (k == "master-link-status") {
        r.link = v;
      }
    }
    if (auto hp = util::parse_host_port(ip + ":" + port)) {
      r.addr = *hp;
      out.push_back(std::move(r));
    }
  }
  return out;
}

bool healthy(const ReplicaInfo& r) {
  return r.link == "ok" && r.flags.find("down") == std::string::npos &&
         r.flags.find("disconnected") == std::string::npos;
}

// Why an address cannot be used here, or empty. Sentinels and --to must be IP literals: the
// Sentinel FAILOVER goes to must be the very one that was counted naming the master a moment
// before, and a name may resolve elsewhere between the two connections (and hiredis resolves
// names without a timeout); Sentinel itself reports addresses as IPs.
std::string not_an_ip(const util::HostPort& addr, const std::string& what) {
  if (util::is_ip_literal(addr.host)) {
    return {};
  }
  return fmt::format("{} {} is a host name: dbcheck switchover needs IP literals there (the "
                     "Sentinel asked to fail over must be the one counted a moment before, and "
                     "a name may resolve elsewhere in between)",
                     what, util::to_string(addr));
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
              fmt::format("CLIENT PAUSE {} WRITE on {}", m_pause_ms, m_d.result.old_primary));
    m_paused_at = Clock::now();
    if (auto r = redis_call(m_old, m_op, {"CLIENT", "PAUSE", std::to_string(m_pause_ms), "WRITE"},
                            m_d.step());
        !r) {
      return abort(r.error()); // the reply may be what was lost: release it anyway
    }
    m_d.end(fmt::format("writes held on {} for up to {}", m_d.result.old_primary,
                        util::format_duration(util::Duration{m_pause_ms})));

    if (auto failed = request()) {
      return *failed;
    }

    m_d.begin(SwitchoverPhase::confirm, "a Sentinel majority naming a new master that passes "
                                        "the writer check");
    util::HostPort fresh;
    std::string seen;
    const WaitEnd confirmed = wait_for(m_d.deadline(), &m_d, [&] {
      // An answer cut short by the deadline itself says nothing: `seen` keeps the one before.
      const auto t = sentinel_majority(m_c, m_d.step());
      if (!t.majority || util::same_endpoint(*t.majority, m_old)) {
        seen = m_d.deadline().expired() && !seen.empty() ? seen : t.detail;
        return false;
      }
      const auto r = writer_check(m_cluster, *t.majority, m_d.step());
      seen = m_d.deadline().expired() && !seen.empty()
                 ? seen
                 : fmt::format("{} named by the majority: {}", util::to_string(*t.majority),
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
              fmt::format("{} answering ROLE as a replica of {} (REPLICAOF {} {})",
                          m_d.result.old_primary, m_d.result.new_primary, fresh.host, fresh.port));
    if (auto r = make_replica(fresh, m_d.deadline(), &m_d); !r) {
      return abort(m_d.stop_reason(r.error()));
    }
    m_d.end(m_d.result.old_primary + " replicates from " + m_d.result.new_primary);

    // No interruption from here on: releasing a replica's writes is also what an abort does.
    m_d.begin(SwitchoverPhase::unpause, "CLIENT UNPAUSE on " + m_d.result.old_primary);
    if (auto r = unpause(); !r) {
      m_d.result.advice =
          fmt::format("CLIENT UNPAUSE on {} (a replica of {} now: safe); its "
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
        return m_d.fail(fmt::format("[cluster.{}]: {}", m_c.name, why));
      }
    }
    if (m_options.to) {
      if (auto why = not_an_ip(*m_options.to, "--to"); !why.empty()) {
        return m_d.fail(why);
      }
    }
    const util::Duration least = minimum_pause(m_options.timeout);
    if (m_options.pause && *m_options.pause < least) {
      return m_d.fail(fmt::format("--pause {} is shorter than {} (the timeout plus the margin "
                                  "for releasing the old master): the pause must outlive the "
                                  "switchover",
                                  util::format_duration(*m_options.pause),
                                  util::format_duration(least)));
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
    const core::SentinelTally tally = sentinel_majority(m_c, m_d.step());
    if (!tally.majority) {
      return m_d.fail("no strict majority of the Sentinels names a master: " + tally.detail);
    }
    m_old = *tally.majority;
    m_d.result.old_primary = util::to_string(m_old);
    if (const auto r = writer_check(m_cluster, m_old, m_d.step()); !core::passes(r.verdict)) {
      return m_d.fail(fmt::format("the current master {} does not pass the writer check: {}",
                                  m_d.result.old_primary, r.verdict.reason));
    }
    std::vector<ReplicaInfo> replicas;
    std::string why_none;
    for (const auto& s : m_c.sentinels) {
      auto reply = redis_call(s, m_op, {"SENTINEL", "REPLICAS", m_c.master_name}, m_d.step());
      if (reply) {
        replicas = parse_replicas(*reply);
        why_none.clear();
        break;
      }
      why_none +=
          fmt::format("{}{}: {}", why_none.empty() ? "" : "; ", util::to_string(s), reply.error());
    }
    if (!why_none.empty()) {
      return m_d.fail("no Sentinel listed the replicas: " + why_none);
    }
    std::vector<std::string> eligible;
    for (const auto& r : replicas) {
      if (healthy(r)) {
        eligible.push_back(util::to_string(r.addr));
      }
    }
    if (eligible.empty()) {
      return m_d.fail("no healthy replica to promote (SENTINEL REPLICAS lists none with link ok)");
    }
    if (m_options.to) {
      const std::string to = util::to_string(*m_options.to);
      if (std::find(eligible.begin(), eligible.end(), to) == eligible.end()) {
        return m_d.fail(fmt::format("--to {} is not a healthy replica of {} (healthy: {})", to,
                                    m_d.result.old_primary, fmt::join(eligible, ", ")));
      }
      if (eligible.size() > 1) {
        return m_d.fail(fmt::format(
            "--to {}: Sentinel picks the replica itself, and {} are eligible; give the others "
            "replica-priority 0 first",
            to, eligible.size()));
      }
    }
    // What is left of the deadline now, plus the margin: the pause cannot end while the run
    // (or the release after it) still counts on it.
    m_pause_ms = m_options.pause ? m_options.pause->count()
                                 : std::chrono::ceil<std::chrono::milliseconds>(
                                       m_d.deadline().remaining() + k_pause_margin)
                                       .count();
    m_d.result.plan = {
        fmt::format(
            "pause writes on {} (CLIENT PAUSE {} WRITE: held, not refused; the pause "
            "outlives the deadline by at least {})",
            m_d.result.old_primary, m_pause_ms,
            util::format_duration(std::chrono::duration_cast<util::Duration>(k_pause_margin))),
        fmt::format("SENTINEL FAILOVER {} to a Sentinel of the majority naming {} (counted again "
                    "just before; Sentinel promotes one of: {})",
                    m_c.master_name, m_d.result.old_primary, fmt::join(eligible, ", ")),
        fmt::format("wait until {} of the {} Sentinels name the new master and it passes the "
                    "writer check",
                    tally.needed, tally.configured),
        fmt::format("make {} a replica of the new master (REPLICAOF)", m_d.result.old_primary),
        fmt::format("CLIENT UNPAUSE on {}", m_d.result.old_primary)};
    m_d.end(fmt::format("master {} (named by {} of {} Sentinels, passes the writer check); "
                        "healthy replicas: {}",
                        m_d.result.old_primary, tally.majority_votes, tally.configured,
                        fmt::join(eligible, ", ")));
    return std::nullopt;
  }

  // SENTINEL FAILOVER, to Sentinels of the majority naming the old master just now; a
  // failure (after releasing the old master) as the result, else nullopt.
  std::optional<SwitchoverResult> request() {
    m_d.begin(SwitchoverPhase::request,
              fmt::format("a Sentinel of the majority naming {} accepting SENTINEL FAILOVER {}",
                          m_d.result.old_primary, m_c.master_name));
    const Deadline request_by{std::min(m_d.deadline().at(), Clock::now() + k_request)};
    std::string last_error;
    std::string accepted;
    const WaitEnd requested = wait_for(request_by, &m_d, [&] {
      const auto t = sentinel_majority(m_c, m_d.step());
      if (!t.majority || !util::same_endpoint(*t.majority, m_old)) {
        last_error =
            fmt::format("no Sentinel majority names {} now ({})", m_d.result.old_primary, t.detail);
        return false;
      }
      const auto voters = sentinels_naming(m_c, m_old, m_d.step());
      if (voters.size() < t.needed) {
        last_error = fmt::format("asked one by one, {} of the Sentinels name {} (need {})",
                                 voters.size(), m_d.result.old_primary, t.needed);
        return false;
      }
      for (const auto& s : voters) {
        if (m_d.interrupted()) {
          return false;
        }
        const FailoverReply r = ask_failover(s, m_op, m_c.master_name, m_d.step());
        if (r.sent == FailoverSent::accepted) {
          m_failover_sent = true;
          accepted = "accepted by " + util::to_string(s);
          return true;
        }
        if (r.sent == FailoverSent::unknown) {
          // Another Sentinel could start a second failover: go on as if it was accepted.
          m_failover_sent = true;
          accepted = fmt::format("sent to {}, no reply ({}): taken as accepted", util::to_string(s),
                                 r.text);
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
    if (auto r = redis_call(m_old, m_op, {"REPLICAOF", master.host, std::to_string(master.port)},
                            step_within(by));
        !r) {
      return tl::make_unexpected(
          fmt::format("REPLICAOF on {} failed: {}", m_d.result.old_primary, r.error()));
    }
    std::string seen;
    const WaitEnd demoted = wait_for(by, driver, [&] {
      auto r = redis_call(m_old, m_op, {"ROLE"}, step_within(by));
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
      return tl::make_unexpected(fmt::format("{} did not become a replica of {} in time (last: {})",
                                             m_d.result.old_primary, util::to_string(master),
                                             seen));
    }
    return {};
  }

  tl::expected<void, std::string> unpause() {
    if (auto r = redis_call(m_old, m_op, {"CLIENT", "UNPAUSE"},
                            Deadline{Clock::now() + k_unpause_budget});
        !r) {
      return tl::make_unexpected(r.error());
    }
    return {};
  }

  long long pause_left_s() const {
    return whole_seconds(m_paused_at + std::chrono::milliseconds{m_pause_ms} - Clock::now());
  }

  // Ends a run that cannot go on after the pause (`error`: why), releasing the old master so
  // that there are never two writable masters. While FAILOVER was not sent and the Sentinel
  // majority names it (or none), it is unpaused as it is. Otherwise only once it is a replica
  // of the master the majority names (looked for during k_release_budget: Sentinel may still
  // be switching); else it stays paused, and the result says what the operator must do.
  // Signals are not looked at here: the release is bounded and is what they ask for.
  SwitchoverResult abort(const std::string& error) {
    const Deadline by{Clock::now() + k_release_budget};
    std::optional<util::HostPort> target;
    std::string seen;
    if (!m_failover_sent) {
      const auto t = sentinel_majority(m_c, step_within(by));
      if (!t.majority || util::same_endpoint(*t.majority, m_old)) {
        return fail_unpaused(error, "still the master (SENTINEL FAILOVER was not sent)");
      }
      target = t.majority; // a failover not ours moved the majority meanwhile
    } else {
      wait_for(by, nullptr, [&] {
        const auto t = sentinel_majority(m_c, step_within(by));
        seen = t.detail;
        if (t.majority && !util::same_endpoint(*t.majority, m_old)) {
          target = t.majority;
          return true;
        }
        return false;
      });
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
      m_d.result.advice = fmt::format("CLIENT UNPAUSE on {} ({}: safe); its pause ends by itself "
                                      "in about {} s anyway",
                                      m_d.result.old_primary, state, pause_left_s());
      return m_d.fail(fmt::format("{}; {} is {}, but CLIENT UNPAUSE failed ({})", error,
                                  m_d.result.old_primary, state, r.error()));
    }
    return m_d.fail(
        fmt::format("{}; {} is {}; writes on it unpaused", error, m_d.result.old_primary, state));
  }

  // Fails leaving the old master paused on purpose (`why`), with what the operator must do.
  SwitchoverResult leave_paused(const std::string& error, const std::string& why) {
    const std::string& old = m_d.result.old_primary;
    m_d.result.left_paused = true;
    m_d.result.advice = fmt::format(
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
    return m_d.fail(fmt::format("{}; {} LEFT PAUSED: {}", error, old, why));
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

// ---------------------------------------------------------------- PostgreSQL

bool can_take_over(const core::PatroniMember& m) {
  return !core::is_leader_role(m.role) && (m.state == "running" || m.state == "streaming");
}

// After an interruption once POST /switchover may have reached Patroni: who Patroni names now.
std::string patroni_state(const config::PostgresCluster& c, const std::string& old_name,
                          const Deadline& deadline) {
  auto view = patroni_view(c, deadline);
  if (!view) {
    return "Patroni could not be asked who leads now: " + view.error().detail;
  }
  const core::PatroniMember* now = core::find_leader(*view);
  if (now == nullptr) {
    return "Patroni names no leader right now (the switchover may be under way)";
  }
  return fmt::format("Patroni {} {} ({}) as leader",
                     now->name == old_name ? "still names" : "now names", now->name,
                     util::to_string(now->address));
}

SwitchoverResult pg_switchover(const config::PostgresCluster& c, const config::Cluster& cluster,
                               const SwitchoverOptions& options, Driver& d) {
  d.begin(SwitchoverPhase::preflight, "asking Patroni for the cluster");
  auto op_or = operator_of(c.operator_user, c.operator_password_file);
  if (!op_or) {
    return d.fail(op_or.error());
  }
  auto view = patroni_view(c, d.step());
  if (!view) {
    return d.fail(view.error().detail);
  }
  if (view->paused) {
    return d.fail("Patroni is paused (maintenance mode): `patronictl resume` first");
  }
  const core::PatroniMember* leader = core::find_leader(*view);
  if (leader == nullptr) {
    return d.fail("Patroni names no leader");
  }
  const std::string old_name = leader->name;
  d.result.old_primary = util::to_string(leader->address);
  if (const auto r = writer_check(cluster, leader->address, d.step()); !core::passes(r.verdict)) {
    return d.fail(fmt::format("the current leader {} does not pass the writer check: {}",
                              d.result.old_primary, r.verdict.reason));
  }
  std::vector<std::string> eligible;
  for (const auto& m : view->members) {
    if (can_take_over(m)) {
      eligible.push_back(fmt::format("{} ({})", m.name, util::to_string(m.address)));
    }
  }
  std::optional<std::string> candidate;
  if (options.to) {
    const core::PatroniMember* m = core::find_member(*view, *options.to);
    if (m == nullptr) {
      return d.fail(
          fmt::format("--to {}: no Patroni member has that address", util::to_string(*options.to)));
    }
    if (!can_take_over(*m)) {
      return d.fail(fmt::format("--to {}: member {} is {} and {}, not a running replica",
                                util::to_string(*options.to), m->name, m->role, m->state));
    }
    candidate = m->name;
  } else if (eligible.empty()) {
    return d.fail("no running replica to switch over to");
  }
  d.result.plan = {
      fmt::format("POST /switchover to Patroni: leader {}{}", old_name,
                  candidate ? ", candidate " + *candidate : " (Patroni picks the candidate)"),
      "wait until Patroni names the new leader and it passes the writer check (not in "
      "recovery, read-write)"};
  d.end(fmt::format("leader {} ({}) passes the writer check; replicas that can take over: {}",
                    old_name, d.result.old_primary, fmt::join(eligible, ", ")));
  if (options.dry_run) {
    return d.finish();
  }
  if (d.interrupted()) {
    return d.fail(d.stop_reason("") + " before anything changed");
  }

  // Once the request may have reached Patroni, an interruption only stops the waiting:
  // Patroni runs the switchover by itself, and undoing it would be a second switchover.
  const auto interrupted_after_request = [&] {
    const std::string state = patroni_state(c, old_name, d.step());
    d.result.advice = fmt::format("see where the switchover went (`patronictl list`, or `dbcheck "
                                  "switchover --dry-run`) before acting: {}",
                                  state);
    return d.fail(fmt::format("{} after the switchover request was sent; Patroni carries it "
                              "out (or not) by itself and it is not undone: {}",
                              d.stop_reason(""), state));
  };

  d.begin(SwitchoverPhase::request, "Patroni accepting POST /switchover");
  nlohmann::json body = {{"leader", old_name}};
  if (candidate) {
    body["candidate"] = *candidate;
  }
  std::optional<HttpCredentials> creds;
  if (*op_or) {
    creds = HttpCredentials{(*op_or)->user, (*op_or)->password.reveal()};
  }
  HttpOptions http;
  http.cafile = c.patroni_cafile;
  std::string errors;
  bool accepted = false;
  for (const auto& base : c.patroni) {
    // Patroni answers when the switchover is done (or has failed): the whole deadline. The
    // POST runs on its own thread so that a signal stops the waiting for it.
    auto reply =
        spawn([url = base + "/switchover", text = body.dump(), creds, http,
               deadline = d.deadline()] { return post_json(url, text, creds, http, deadline); });
    while (reply.wait_for(k_poll) != std::future_status::ready) {
      if (d.interrupted()) {
        return interrupted_after_request();
      }
    }
    const HttpReply r = reply.get();
    if (r.attempt.status == 200 || r.attempt.status == 202) {
      accepted = true;
      break;
    }
    std::string text = r.body.substr(0, 200);
    text.erase(std::remove(text.begin(), text.end(), '\n'), text.end());
    errors += fmt::format("{}{}: {}", errors.empty() ? "" : "; ", r.attempt.url,
                          r.attempt.status != 0 ? fmt::format("HTTP {} {}", r.attempt.status, text)
                                                : r.attempt.error);
    if (r.attempt.status != 0) {
      break; // Patroni answered and refused: asking another member would not change that
    }
  }
  if (!accepted) {
    return d.fail("Patroni did not accept the switchover: " + errors);
  }
  d.end("Patroni accepted");

  d.begin(SwitchoverPhase::confirm, "Patroni naming a new leader that passes the writer check");
  std::string seen;
  const WaitEnd confirmed = wait_for(d.deadline(), &d, [&] {
    auto v = patroni_view(c, d.step());
    if (!v) {
      seen = v.error().detail;
      return false;
    }
    const core::PatroniMember* now = core::find_leader(*v);
    if (now == nullptr || now->name == old_name || (candidate && now->name != *candidate)) {
      seen = now != nullptr ? "Patroni still names " + now->name : "Patroni names no leader";
      return false;
    }
    const auto r = writer_check(cluster, now->address, d.step());
    seen = r.verdict.reason;
    d.result.new_primary = util::to_string(now->address);
    return core::passes(r.verdict);
  });
  if (confirmed == WaitEnd::interrupted) {
    return interrupted_after_request();
  }
  if (confirmed != WaitEnd::done) {
    return d.fail("no new leader confirmed before the deadline (last: " + seen + ")");
  }
  d.end(d.result.new_primary + " is the leader for Patroni and for itself");
  return d.finish();
}

} // namespace

std::string_view to_string(SwitchoverPhase phase) {
  switch (phase) {
  case SwitchoverPhase::preflight:
    return "preflight";
  case SwitchoverPhase::pause:
    return "pause";
  case SwitchoverPhase::request:
    return "request";
  case SwitchoverPhase::confirm:
    return "confirm";
  case SwitchoverPhase::demote:
    return "demote";
  case SwitchoverPhase::unpause:
    return "unpause";
  }
  return "?";
}

util::Duration minimum_pause(util::Duration timeout) {
  return timeout + std::chrono::duration_cast<util::Duration>(k_pause_margin);
}

SwitchoverResult run_switchover(const config::Cluster& cluster, const SwitchoverOptions& options,
                                const SwitchoverProgress& progress) {
  Driver d(options, progress);
  try {
    if (const auto* redis = std::get_if<config::RedisCluster>(&cluster)) {
      return RedisSwitchover(*redis, cluster, options, d).run();
    }
    return pg_switchover(std::get<config::PostgresCluster>(cluster), cluster, options, d);
  } catch (const std::exception& e) {
    return d.fail(std::string{"internal error: "} + e.what());
  }
}

} // namespace dbcheck::switchover
