#include "pg_switchover.hpp"

#include <core/patroni_cluster.hpp>
#include <probe/async.hpp>
#include <probe/http_client.hpp>
#include <probe/patroni_client.hpp>
#include <probe/pg_check.hpp>
#include <util/format.hpp>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <future>

namespace dbcheck::switchover {

using namespace std::chrono_literals;
namespace {

using probe::Deadline;
using probe::HttpCredentials;
using probe::HttpOptions;
using probe::HttpReply;
using probe::patroni_view;
using probe::spawn;

bool can_take_over(const core::PatroniMember& m) {
  return !core::is_leader_role(m.role) && (m.state == "running" || m.state == "streaming");
}

// After an interruption once POST /switchover may have reached Patroni: who Patroni names now.
std::string patroni_state(probe::Peers& peers, const config::PostgresCluster& c,
                          const std::string& old_name, const Deadline& deadline) {
  auto view = patroni_view(peers, c, deadline);
  if (!view) {
    return "Patroni could not be asked who leads now: " + view.error().detail;
  }
  const core::PatroniMember* now = core::find_leader(*view);
  if (now == nullptr) {
    return "Patroni names no leader right now (the switchover may be under way)";
  }
  return util::format("Patroni {} {} ({}) as leader",
                      now->name == old_name ? "still names" : "now names", now->name,
                      util::to_string(now->address));
}

} // namespace

SwitchoverResult pg_switchover(const config::PostgresCluster& c, const config::Cluster& cluster,
                               const SwitchoverOptions& options, Driver& d) {
  d.begin(SwitchoverPhase::preflight, "asking Patroni for the cluster");
  auto op_or = operator_of(c.operator_user, c.operator_password_file);
  if (!op_or) {
    return d.fail(op_or.error());
  }
  auto view = patroni_view(*d.peers(), c, d.step());
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
  if (const auto r = writer_check(d.peers(), cluster, leader->address, d.step());
      !core::passes(r.verdict)) {
    return d.fail(util::format("the current leader {} does not pass the writer check: {}",
                               d.result.old_primary, r.verdict.reason));
  }
  std::vector<std::string> eligible;
  for (const auto& m : view->members) {
    if (can_take_over(m)) {
      eligible.push_back(util::format("{} ({})", m.name, util::to_string(m.address)));
    }
  }
  std::optional<std::string> candidate;
  if (options.to) {
    const core::PatroniMember* m = core::find_member(*view, *options.to);
    if (m == nullptr) {
      return d.fail(util::format("--to {}: no Patroni member has that address",
                                 util::to_string(*options.to)));
    }
    if (!can_take_over(*m)) {
      return d.fail(util::format("--to {}: member {} is {} and {}, not a running replica",
                                 util::to_string(*options.to), m->name, m->role, m->state));
    }
    candidate = m->name;
  } else if (eligible.empty()) {
    return d.fail("no running replica to switch over to");
  }
  d.result.plan = {
      util::format("POST /switchover to Patroni: leader {}{}", old_name,
                   candidate ? ", candidate " + *candidate : " (Patroni picks the candidate)"),
      "wait until Patroni names the new leader and it passes the writer check (not in "
      "recovery, read-write)"};
  d.end(util::format("leader {} ({}) passes the writer check; replicas that can take over: {}",
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
    const std::string state = patroni_state(*d.peers(), c, old_name, d.step());
    d.result.advice = util::format("see where the switchover went (`patronictl list`, or `dbcheck "
                                   "switchover --dry-run`) before acting: {}",
                                   state);
    return d.fail(util::format("{} after the switchover request was sent; Patroni carries it "
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
  const HttpOptions http = probe::patroni_http(c);
  std::string errors;
  bool accepted = false;
  for (const auto& base : c.patroni) {
    // Patroni answers when the switchover is done (or has failed): the whole deadline. The
    // POST runs on its own thread so that a signal stops the waiting for it.
    auto reply =
        spawn([peers = d.peers(), url = base + "/switchover", text = body.dump(), creds, http,
               deadline = d.deadline()] { return peers->post(url, text, creds, http, deadline); });
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
    errors +=
        util::format("{}{}: {}", errors.empty() ? "" : "; ", r.attempt.url,
                     r.attempt.status != 0 ? util::format("HTTP {} {}", r.attempt.status, text)
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
  const WaitEnd confirmed = wait_for(*d.peers(), d.deadline(), &d, [&] {
    auto v = patroni_view(*d.peers(), c, d.step());
    if (!v) {
      seen = v.error().detail;
      return false;
    }
    const core::PatroniMember* now = core::find_leader(*v);
    if (now == nullptr || now->name == old_name || (candidate && now->name != *candidate)) {
      seen = now != nullptr ? "Patroni still names " + now->name : "Patroni names no leader";
      return false;
    }
    const auto r = writer_check(d.peers(), cluster, now->address, d.step());
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

} // namespace dbcheck::switchover
