#include "switchover.hpp"

#include "http_client.hpp"
#include "pg_check.hpp"
#include "redis_check.hpp"
#include "redis_link.hpp"
#include "run_check.hpp"

#include <config/password_file.hpp>
#include <core/patroni_cluster.hpp>
#include <core/redis_replies.hpp>
#include <core/verdict.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <thread>

namespace dbcheck::probe {
namespace {

using namespace std::chrono_literals;

constexpr auto k_poll = 200ms;             // between two looks while waiting
constexpr util::Duration k_step{2000};     // one question or one confirming check
constexpr util::Duration k_request{10000}; // Redis: Sentinels accepting SENTINEL FAILOVER
constexpr auto k_unpause_budget = 2000ms;  // the unpause after a failure, past the deadline

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

// Tracks phases, times and progress events, and builds the result.
class Driver {
public:
  Driver(const SwitchoverOptions& options, const SwitchoverProgress& progress)
      : m_progress(progress), m_start(Clock::now()), m_deadline(Deadline::in(options.timeout)) {}

  // The deadline of the whole switchover.
  const Deadline& deadline() const { return m_deadline; }
  // A deadline for one step: k_step from now, never past the whole one.
  Deadline step() const { return Deadline{std::min(m_deadline.at(), Clock::now() + k_step)}; }
  void begin(SwitchoverPhase phase, const std::string& waits_for) {
    m_phase = phase;
    m_phase_start = Clock::now();
    emit(false, true, waits_for);
  }
  void end(const std::string& text) {
    record();
    emit(true, true, text);
  }
  SwitchoverResult fail(const std::string& error) {
    record();
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
  void record() { result.phases.push_back({m_phase, seconds_since(m_phase_start)}); }
  void emit(bool finished, bool ok, const std::string& text) {
    if (m_progress) {
      m_progress({m_phase, finished, ok, text, seconds_since(m_start)});
    }
  }
  const SwitchoverProgress& m_progress;
  Clock::time_point m_start;
  Deadline m_deadline;
  SwitchoverPhase m_phase = SwitchoverPhase::preflight;
  Clock::time_point m_phase_start;
};

// Polls `done` every k_poll until it returns true or `deadline` passes.
template <class Pred>
bool wait_for(const Deadline& deadline, Pred&& done) {
  while (true) {
    if (done()) {
      return true;
    }
    if (deadline.expired()) {
      return false;
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

SwitchoverResult redis_switchover(const config::RedisCluster& c, const config::Cluster& cluster,
                                  const SwitchoverOptions& options, Driver& d) {
  d.begin(SwitchoverPhase::preflight, "asking the Sentinels which master they name");
  auto op_or = operator_of(c.operator_user, c.operator_password_file);
  if (!op_or) {
    return d.fail(op_or.error());
  }
  if (!*op_or) {
    return d.fail("set operator_user and operator_password_file in [cluster." + c.name +
                  "]: the check user may not pause writes or fail over (see `dbcheck setup-sql "
                  "redis-operator` and `sentinel-operator`)");
  }
  const Operator op = std::move(**op_or);
  const core::SentinelTally tally = sentinel_majority(c, d.step());
  if (!tally.majority) {
    return d.fail("no strict majority of the Sentinels names a master: " + tally.detail);
  }
  const util::HostPort old = *tally.majority;
  d.result.old_primary = util::to_string(old);
  if (const auto r = writer_check(cluster, old, d.step()); !core::passes(r.verdict)) {
    return d.fail(fmt::format("the current master {} does not pass the writer check: {}",
                              d.result.old_primary, r.verdict.reason));
  }
  std::vector<ReplicaInfo> replicas;
  std::string why_none;
  for (const auto& s : c.sentinels) {
    auto reply = redis_call(s, op, {"SENTINEL", "REPLICAS", c.master_name}, d.step());
    if (reply) {
      replicas = parse_replicas(*reply);
      why_none.clear();
      break;
    }
    why_none +=
        fmt::format("{}{}: {}", why_none.empty() ? "" : "; ", util::to_string(s), reply.error());
  }
  if (!why_none.empty()) {
    return d.fail("no Sentinel listed the replicas: " + why_none);
  }
  std::vector<std::string> eligible;
  for (const auto& r : replicas) {
    if (healthy(r)) {
      eligible.push_back(util::to_string(r.addr));
    }
  }
  if (eligible.empty()) {
    return d.fail("no healthy replica to promote (SENTINEL REPLICAS lists none with link ok)");
  }
  if (options.to) {
    const std::string to = util::to_string(*options.to);
    if (std::find(eligible.begin(), eligible.end(), to) == eligible.end()) {
      return d.fail(fmt::format("--to {} is not a healthy replica of {} (healthy: {})", to,
                                d.result.old_primary, fmt::join(eligible, ", ")));
    }
    if (eligible.size() > 1) {
      return d.fail(fmt::format(
          "--to {}: Sentinel picks the replica itself, and {} are eligible; give the others "
          "replica-priority 0 first",
          to, eligible.size()));
    }
  }
  const auto pause_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(options.pause).count();
  d.result.plan = {
      fmt::format("pause writes on {} (CLIENT PAUSE {} WRITE: held, not refused)",
                  d.result.old_primary, pause_ms),
      fmt::format("SENTINEL FAILOVER {} (Sentinel promotes one of: {})", c.master_name,
                  fmt::join(eligible, ", ")),
      fmt::format("wait until {} of the {} Sentinels name the new master and it passes the "
                  "writer check",
                  tally.needed, tally.configured),
      fmt::format("make {} a replica of the new master (REPLICAOF)", d.result.old_primary),
      fmt::format("CLIENT UNPAUSE on {}", d.result.old_primary)};
  d.end(fmt::format("master {} (named by {} of {} Sentinels, passes the writer check); "
                    "healthy replicas: {}",
                    d.result.old_primary, tally.majority_votes, tally.configured,
                    fmt::join(eligible, ", ")));
  if (options.dry_run) {
    return d.finish();
  }

  d.begin(SwitchoverPhase::pause,
          fmt::format("CLIENT PAUSE {} WRITE on {}", pause_ms, d.result.old_primary));
  if (auto r =
          redis_call(old, op, {"CLIENT", "PAUSE", std::to_string(pause_ms), "WRITE"}, d.step());
      !r) {
    return d.fail(r.error());
  }
  d.end("writes held on " + d.result.old_primary);

  // From here on, any failure unpauses the old master before reporting.
  const auto abort = [&](const std::string& error) {
    const Deadline unpause_by{Clock::now() + k_unpause_budget};
    const auto r = redis_call(old, op, {"CLIENT", "UNPAUSE"}, unpause_by);
    return d.fail(error + (r ? fmt::format("; writes on {} unpaused", d.result.old_primary)
                             : fmt::format("; CLIENT UNPAUSE failed too ({}): the pause ends by "
                                           "itself {} ms after it began",
                                           r.error(), pause_ms)));
  };

  d.begin(SwitchoverPhase::request, "a Sentinel accepting SENTINEL FAILOVER " + c.master_name);
  const Deadline request_by{std::min(d.deadline().at(), Clock::now() + k_request)};
  std::string last_error;
  const bool accepted = wait_for(request_by, [&] {
    for (const auto& s : c.sentinels) {
      auto r = redis_call(s, op, {"SENTINEL", "FAILOVER", c.master_name}, d.step());
      if (r) {
        return true;
      }
      last_error = util::to_string(s) + ": " + r.error();
    }
    return false;
  });
  if (!accepted) {
    return abort("no Sentinel accepted the failover: " + last_error);
  }
  d.end("accepted");

  d.begin(SwitchoverPhase::confirm, "a Sentinel majority naming a new master that passes the "
                                    "writer check");
  util::HostPort fresh;
  std::string seen;
  const bool confirmed = wait_for(d.deadline(), [&] {
    const auto t = sentinel_majority(c, d.step());
    if (!t.majority || util::same_endpoint(*t.majority, old)) {
      seen = t.detail;
      return false;
    }
    const auto r = writer_check(cluster, *t.majority, d.step());
    seen = r.verdict.reason;
    fresh = *t.majority;
    return core::passes(r.verdict);
  });
  if (!confirmed) {
    return abort("no new master confirmed before the deadline (last: " + seen + ")");
  }
  d.result.new_primary = util::to_string(fresh);
  d.end(d.result.new_primary + " is the master for the Sentinel majority and for itself");

  // The old master is demoted here rather than left to Sentinel: Sentinel's own
  // reconfiguration travels on its command link behind its hello PUBLISH, which CLIENT PAUSE
  // WRITE holds, so it would only happen when the pause runs out -- and the writes held
  // until then would meet a master, be acknowledged, and be lost with its resync.
  d.begin(SwitchoverPhase::demote,
          fmt::format("{} answering ROLE as a replica of {} (REPLICAOF {} {})",
                      d.result.old_primary, d.result.new_primary, fresh.host, fresh.port));
  if (auto r = redis_call(old, op, {"REPLICAOF", fresh.host, std::to_string(fresh.port)}, d.step());
      !r) {
    return abort(fmt::format("REPLICAOF on {} failed: {}", d.result.old_primary, r.error()));
  }
  const bool demoted = wait_for(d.deadline(), [&] {
    auto r = redis_call(old, op, {"ROLE"}, d.step());
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
    return !role->master && util::same_endpoint(role->master_addr, fresh);
  });
  if (!demoted) {
    return abort(fmt::format("{} did not become a replica of {} before the deadline (last: {})",
                             d.result.old_primary, d.result.new_primary, seen));
  }
  d.end(d.result.old_primary + " replicates from " + d.result.new_primary);

  d.begin(SwitchoverPhase::unpause, "CLIENT UNPAUSE on " + d.result.old_primary);
  const Deadline unpause_by{Clock::now() + k_unpause_budget};
  if (auto r = redis_call(old, op, {"CLIENT", "UNPAUSE"}, unpause_by); !r) {
    return d.fail(r.error() +
                  fmt::format(": the pause ends by itself {} ms after it began", pause_ms));
  }
  d.end("held writes released (they now meet a replica and are refused: clients retry them)");
  return d.finish();
}

// ---------------------------------------------------------------- PostgreSQL

bool can_take_over(const core::PatroniMember& m) {
  return !core::is_leader_role(m.role) && (m.state == "running" || m.state == "streaming");
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
    // Patroni answers when the switchover is done (or has failed): the whole deadline.
    const HttpReply r = post_json(base + "/switchover", body.dump(), creds, http, d.deadline());
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
  const bool confirmed = wait_for(d.deadline(), [&] {
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
  if (!confirmed) {
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

SwitchoverResult run_switchover(const config::Cluster& cluster, const SwitchoverOptions& options,
                                const SwitchoverProgress& progress) {
  Driver d(options, progress);
  try {
    if (const auto* redis = std::get_if<config::RedisCluster>(&cluster)) {
      return redis_switchover(*redis, cluster, options, d);
    }
    return pg_switchover(std::get<config::PostgresCluster>(cluster), cluster, options, d);
  } catch (const std::exception& e) {
    return d.fail(std::string{"internal error: "} + e.what());
  }
}

} // namespace dbcheck::probe
