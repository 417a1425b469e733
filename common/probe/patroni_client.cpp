#include "patroni_client.hpp"

#include "name_book.hpp"

#include <core/patroni_election.hpp>
#include <core/shared_view.hpp>
#include <util/format.hpp>
#include <util/url.hpp>

#include <algorithm>

namespace dbcheck::probe {
namespace {

using core::ProbeError;

std::string summarize(const core::ClusterView& view) {
  std::string out;
  for (const auto& m : view.members) {
    std::string tags;
    tags += m.noloadbalance ? ", noloadbalance" : "";
    tags += m.nofailover ? ", nofailover" : "";
    tags += m.replicatefrom.empty() ? "" : ", replicatefrom " + m.replicatefrom;
    out += util::format("{}{} {} {} at {}{}", out.empty() ? "" : "; ", m.name, m.role, m.state,
                        util::to_string(m.address),
                        tags.empty() ? "" : util::format(" ({})", tags.substr(2)));
  }
  if (out.empty()) {
    out = "no members";
  }
  return view.paused ? out + "; cluster paused" : out;
}

// Replaces the host names the view advertises by the one address each resolves to, and
// returns the step that reports the lookups (none when every member is an IP literal).
std::optional<core::Step> resolve_members(Peers& peers, core::ClusterView& view,
                                          const util::HostPort& node, const Deadline& deadline) {
  NameBook book{peers, node};
  std::vector<util::HostPort> endpoints;
  for (const auto& m : view.members) {
    endpoints.push_back(m.address);
  }
  auto step = book.look_up(endpoints, "the members' host names", deadline);
  for (auto& m : view.members) {
    const util::HostPort resolved = book.canonical(m.address);
    m.unresolved = book.unresolved(m.address);
    if (!(resolved == m.address)) {
      m.advertised = m.address.host;
      m.address = resolved;
    }
  }
  return step;
}

} // namespace

namespace {

// How long the members asked first get before the others are asked too (when the first have
// not decided by then): a third of the time left, at most this. Patroni answers /cluster from
// its DCS cache in milliseconds; a member that takes longer is treated as not answering.
constexpr auto k_first_round_wait = std::chrono::milliseconds{250};

// The host part of a base URL ("" when it has none), IPv6 brackets stripped.
std::string base_host(const std::string& base) {
  const auto o = util::url_origin(base);
  const auto host_start = o ? o->find("://") : std::string::npos;
  const auto port_colon = o ? o->rfind(':') : std::string::npos;
  if (host_start == std::string::npos || port_colon == std::string::npos ||
      port_colon <= host_start + 3) {
    return "";
  }
  std::string host = o->substr(host_start + 3, port_colon - host_start - 3);
  if (host.size() > 2 && host.front() == '[') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

// The configured Patroni on `node`'s host, when exactly one is: the node's own, asked first.
// (On a lab where every member shares one host none is told apart, and the order stays.)
std::optional<std::size_t> own_base(const std::vector<std::string>& bases,
                                    const util::HostPort& node) {
  std::optional<std::size_t> own;
  for (std::size_t i = 0; i < bases.size(); ++i) {
    if (util::same_endpoint(util::HostPort{base_host(bases[i]), 1},
                            util::HostPort{node.host, 1})) {
      if (own) {
        return std::nullopt;
      }
      own = i;
    }
  }
  return own;
}

core::Failure failure_kind(const HttpAttempt& a) {
  return a.timed_out ? core::Failure::timeout
         : a.status != 0 ? core::Failure::protocol
                         : core::Failure::network;
}

// True when `view` names a leader that is, once resolved, not `node`.
bool names_another(Peers& peers, core::ClusterView& view, const util::HostPort& node,
                   const Deadline& deadline, std::vector<core::Step>& steps) {
  if (core::find_leader(view) == nullptr) {
    return false;
  }
  if (auto step = resolve_members(peers, view, node, deadline)) {
    steps.push_back(std::move(*step));
  }
  const core::PatroniMember* leader = core::find_leader(view);
  return leader->unresolved.empty() && !util::same_endpoint(leader->address, node);
}

} // namespace

namespace {

// The key a cluster's view is shared under: its URLs without credentials, and the TLS files
// they are reached with (a check whose CA or client certificate fails must not pass on a view
// others took with theirs).
std::string share_key(const std::vector<std::string>& bases, const HttpOptions& tls) {
  std::vector<std::string> parts;
  for (const auto& b : bases) {
    parts.push_back(util::redact_url(b));
  }
  for (const auto* file : {&tls.cafile, &tls.certfile, &tls.keyfile}) {
    parts.push_back(file->value_or(""));
  }
  return core::shared_view_key(parts);
}

// The members' view another check shared, as ask_patroni() would have returned it, or nullopt.
std::optional<ManagerResult> shared_result(Peers& peers, const std::vector<std::string>& bases,
                                           const HttpOptions& tls,
                                           const std::optional<util::HostPort>& node,
                                           const Deadline& deadline, const ShareSettings& share) {
  auto shared = peers.shared_view(share, share_key(bases, tls));
  if (!shared || shared->configured != bases.size()) {
    return std::nullopt;
  }
  auto view = core::parse_patroni_cluster(shared->body);
  if (!view) {
    return std::nullopt;
  }
  core::Step step;
  step.opinion = "manager";
  step.peer = "shared view";
  step.asked = "GET /cluster";
  step.answer =
      util::format("{} of {} members agreed {:.0f} ms ago (check pid {}): {}", shared->agreeing,
                   shared->configured, shared->age_ms, shared->pid, summarize(*view));
  ManagerResult r{std::move(*view), {std::move(step)}, 2 * shared->agreeing > shared->configured,
                  true};
  if (node) {
    if (auto lookup = resolve_members(peers, *r.view, *node, deadline)) {
      r.steps.push_back(std::move(*lookup));
    }
  }
  return r;
}

} // namespace

ManagerResult ask_patroni(Peers& peers, const std::vector<std::string>& bases,
                          const HttpOptions& tls, const std::optional<util::HostPort>& node,
                          const Deadline& deadline, bool own_denial_decides,
                          const ShareSettings& share) {
  if (share.max_age.count() > 0 && share.reuse) {
    if (auto r = shared_result(peers, bases, tls, node, deadline, share)) {
      return std::move(*r);
    }
  }
  const auto asked_at = std::chrono::steady_clock::now(); // the shared view's age counts from here
  const std::size_t n = bases.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) {
    order[i] = i;
  }
  const std::optional<std::size_t> own = node ? own_base(bases, *node) : std::nullopt;
  if (own) {
    std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(*own),
                order.begin() + static_cast<std::ptrdiff_t>(*own) + 1);
  }
  std::vector<std::optional<HttpReply>> replies(n);
  std::vector<std::optional<core::ClusterView>> views(n);
  std::vector<bool> finished(n, false); // answered or failed, not cut at a round's end
  std::vector<core::Step> extra_steps;
  std::optional<core::ClusterView> denial; // the own Patroni's view naming another leader

  // The usable answers and failures in so far (not the transfers cut at a round's end).
  const auto answers_in = [&] {
    std::vector<core::MemberAnswer> out;
    for (std::size_t i = 0; i < n; ++i) {
      if (views[i]) {
        out.push_back({replies[i]->attempt.url, *views[i]});
      } else if (finished[i]) {
        const HttpAttempt& a = replies[i]->attempt;
        out.push_back({a.url, tl::make_unexpected(ProbeError{failure_kind(a), a.error, ""})});
      }
    }
    return out;
  };
  // One round: GET /cluster of `which` at once, until the election is decided, cannot be
  // decided by the members asked so far (not in the `last` round), all have answered, or `by`.
  const auto ask = [&](const std::vector<std::size_t>& which, const Deadline& by, bool last) {
    std::vector<std::string> urls;
    for (const std::size_t i : which) {
      urls.push_back(bases[i] + "/cluster");
    }
    std::vector<core::MemberAnswer> answered = answers_in();
    std::size_t pending = which.size();
    const EnoughFn enough = [&](std::size_t k, HttpReply& reply) {
      --pending;
      const std::size_t i = which[k];
      finished[i] = true;
      if (reply.attempt.error.empty()) {
        auto v = core::parse_patroni_cluster(reply.body);
        if (v) {
          views[i] = std::move(*v);
          answered.push_back({reply.attempt.url, *views[i]});
          return core::election_decided(answered, n) ||
                 (!last && !core::election_possible(answered, pending, n));
        }
        reply.attempt.error = util::format("unusable answer: {}", v.error());
      }
      answered.push_back({reply.attempt.url, tl::make_unexpected(ProbeError{
                                                 failure_kind(reply.attempt), reply.attempt.error,
                                                 ""})});
      // The last round waits for every member: a majority of those that answer still decides.
      return core::election_decided(answered, n) ||
             (!last && !core::election_possible(answered, pending, n));
    };
    std::vector<HttpReply> got = peers.get_all(urls, tls, by, enough);
    for (std::size_t k = 0; k < which.size(); ++k) {
      replies[which[k]] = std::move(got[k]);
    }
  };

  // Rounds: the node's own Patroni alone when its denial decides (a writer check: it names
  // another leader, so this node is not the writer whatever the others say); then enough
  // members for a majority; then every member not yet heard (a refusal, a timeout or a
  // disagreement among the first). Each round but the last gets a short wait.
  std::size_t asked = 0;
  const std::size_t majority = core::first_round(n);
  std::vector<std::size_t> rounds;
  if (own && own_denial_decides) {
    rounds.push_back(1);
  }
  rounds.push_back(majority);
  rounds.push_back(n);
  for (const std::size_t upto : rounds) {
    std::vector<std::size_t> which;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = order[k];
      // Not yet asked, or cut at the end of the round before: ask now.
      if ((k >= asked && k < upto) || (k < asked && !finished[i])) {
        which.push_back(i);
      }
    }
    asked = std::max(asked, upto);
    if (which.empty()) {
      continue;
    }
    const bool last = upto >= n;
    const Deadline by =
        last ? deadline
             : Deadline{std::min(deadline.at(),
                                 Clock::now() + std::min<Clock::duration>(
                                                    k_first_round_wait, deadline.remaining() / 3))};
    ask(which, by, last);
    if (own && own_denial_decides && upto == 1 && views[*own]) {
      // A copy: the others' views are compared with the own one as advertised.
      core::ClusterView copy = *views[*own];
      if (names_another(peers, copy, *node, deadline, extra_steps)) {
        denial = std::move(copy);
        break;
      }
      extra_steps.clear(); // the agreed view's lookup below reports the names
    }
    if (core::election_decided(answers_in(), n) || deadline.expired()) {
      break;
    }
  }

  std::vector<core::Step> steps;
  std::vector<core::MemberAnswer> answers;
  for (const std::size_t i : order) {
    core::Step step;
    step.opinion = "manager";
    step.asked = "GET /cluster";
    if (!replies[i]) {
      step.peer = util::redact_url(bases[i] + "/cluster");
      step.answer = "not needed: the members asked first decided";
      steps.push_back(std::move(step));
      continue;
    }
    const HttpAttempt& a = replies[i]->attempt;
    step.peer = a.url;
    step.latency_ms = a.latency_ms;
    if (views[i]) {
      step.answer = summarize(*views[i]);
      answers.push_back({a.url, *views[i]});
    } else {
      step.answer = a.error;
      answers.push_back({a.url, tl::make_unexpected(ProbeError{failure_kind(a), a.error, ""})});
    }
    steps.push_back(std::move(step));
  }
  for (auto& s : extra_steps) {
    steps.push_back(std::move(s));
  }
  if (denial) {
    return ManagerResult{std::move(*denial), std::move(steps), false};
  }
  core::PatroniElection e = core::elect_leader(answers, n);
  const bool quorum = e.view.has_value() && 2 * e.agreeing > e.configured;
  if (quorum && share.max_age.count() > 0) {
    // The body of the first member of the majority: the view elect_leader() returned.
    for (const std::size_t i : order) {
      if (views[i] && core::leader_label(*views[i]) == core::leader_label(*e.view)) {
        SharedView v{replies[i]->body, e.agreeing, n};
        v.asked_before = std::chrono::steady_clock::now() - asked_at;
        peers.share_view(share, share_key(bases, tls), v);
        break;
      }
    }
  }
  if (e.view && node) {
    if (auto step = resolve_members(peers, *e.view, *node, deadline)) {
      steps.push_back(std::move(*step));
    }
  }
  return ManagerResult{e.view, std::move(steps), quorum};
}

namespace {

// The base URL to ask the leader's own Patroni at, and how it was chosen. In order: the
// configured URL that reaches the same server as the api_url the members list for it (so
// the configured scheme, name and CA apply); else the configured URL on the leader's
// PostgreSQL host (api_url often holds an address the HAProxy host cannot use: a NAT or
// container address, an IP where the certificate names the host); else that api_url itself.
struct LeaderBase {
  std::string url;
  std::string why; // for the reason when the leader does not answer there
};

std::optional<LeaderBase> leader_base(const core::PatroniMember& leader,
                                      const std::vector<std::string>& bases) {
  const auto origin = util::url_origin(leader.api_url);
  for (const auto& b : bases) {
    if (origin && util::url_origin(b) == origin) {
      return LeaderBase{b, "its api_url"};
    }
  }
  for (const auto& b : bases) {
    const std::string host = base_host(b);
    if (!host.empty()) {
      if (util::same_endpoint(util::HostPort{host, 1}, util::HostPort{leader.address.host, 1}) ||
          (!leader.advertised.empty() &&
           util::same_endpoint(util::HostPort{host, 1}, util::HostPort{leader.advertised, 1}))) {
        return LeaderBase{b, util::format("the configured URL on its host, not its api_url \"{}\"",
                                          util::redact_url(leader.api_url))};
      }
    }
  }
  if (origin) {
    return LeaderBase{*origin, "its api_url: no configured URL reaches that server or its host"};
  }
  return std::nullopt;
}

// GET /primary of the leader's own Patroni: 200 only while it holds the leader lock by its
// own clock; its body says whether PostgreSQL runs as primary.
tl::expected<core::LeaderReport, ProbeError>
ask_leader(Peers& peers, const core::PatroniMember& leader, const std::vector<std::string>& bases,
           const HttpOptions& tls, const Deadline& deadline, core::Step& step) {
  step.opinion = "manager";
  step.asked = "GET /primary";
  const auto base = leader_base(leader, bases);
  if (!base) {
    step.peer = leader.name;
    step.answer = util::format("no usable REST API address (api_url \"{}\")",
                               util::redact_url(leader.api_url));
    return tl::make_unexpected(ProbeError{
        core::Failure::protocol,
        util::format("no configured URL is on its host and the members list no usable api_url "
                     "for it (\"{}\")",
                     util::redact_url(leader.api_url)),
        ""});
  }
  step.peer = util::redact_url(base->url);
  HttpOptions options = tls;
  options.max_body = 256 * 1024;
  std::vector<HttpReply> replies = peers.get_all({base->url + "/primary"}, options, deadline,
                                                 [](std::size_t, HttpReply&) { return false; });
  const HttpAttempt& a = replies[0].attempt;
  step.latency_ms = a.latency_ms;
  const bool answered = a.status == 200 || a.status == 503;
  if (!answered) {
    const core::Failure kind = a.timed_out     ? core::Failure::timeout
                               : a.status != 0 ? core::Failure::protocol
                                               : core::Failure::network;
    step.answer = a.error;
    return tl::make_unexpected(
        ProbeError{kind, util::format("{} (asked at {}): {}", a.url, base->why, a.error), ""});
  }
  auto status = core::parse_patroni_status(replies[0].body);
  if (!status) {
    step.answer = util::format("HTTP {}, unusable answer: {}", a.status, status.error());
    return tl::make_unexpected(
        ProbeError{core::Failure::protocol,
                   util::format("{}: unusable answer: {}", a.url, status.error()), ""});
  }
  step.answer = util::format("HTTP {}: state {}, role {}{}", a.status, status->state, status->role,
                             status->name ? ", member " + *status->name : "");
  return core::LeaderReport{util::redact_url(base->url), a.status, std::move(*status)};
}

} // namespace

WriterManagerResult ask_patroni_for_writer(Peers& peers, const std::vector<std::string>& bases,
                                           const HttpOptions& tls, const util::HostPort& node,
                                           const Deadline& deadline, const ShareSettings& share) {
  WriterManagerResult r{ask_patroni(peers, bases, tls, node,
                                   deadline.minus(reserve_for_last_step(deadline)), true, share),
                       std::nullopt};
  if (!r.members.view || r.members.shared) {
    return r; // a shared view never confirms a writer: the caller asks again when it matters
  }
  const core::PatroniMember* leader = core::find_leader(*r.members.view);
  if (leader == nullptr || !util::same_endpoint(leader->address, node)) {
    return r; // not this node: nothing to confirm
  }
  core::Step step;
  const auto t0 = peers.now();
  r.leader_report = ask_leader(peers, *leader, bases, tls, deadline, step);
  step.latency_ms = elapsed_ms(t0, peers.now());
  r.members.steps.push_back(std::move(step));
  return r;
}

ShareSettings patroni_sharing(const config::PostgresCluster& cluster) {
  return ShareSettings{cluster.shared_view_dir.value_or(""), cluster.shared_view_max_age, true};
}

HttpOptions patroni_http(const config::PostgresCluster& cluster) {
  HttpOptions o;
  o.cafile = cluster.patroni_cafile;
  o.certfile = cluster.patroni_certfile;
  o.keyfile = cluster.patroni_keyfile;
  return o;
}

} // namespace dbcheck::probe
