#include "patroni_client.hpp"

#include "name_book.hpp"

#include <core/patroni_election.hpp>
#include <core/patroni_rounds.hpp>
#include <core/shared_view.hpp>
#include <util/format.hpp>
#include <util/url.hpp>

#include <algorithm>
#include <chrono>

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

core::Failure failure_kind(const HttpAttempt& a) {
  return a.timed_out     ? core::Failure::timeout
         : a.status != 0 ? core::Failure::protocol
                         : core::Failure::network;
}

// A failed attempt as a member's answer.
core::MemberAnswer failed(const HttpAttempt& a) {
  return {a.url, tl::make_unexpected(ProbeError{failure_kind(a), a.error, ""})};
}

// A member's reply to GET /cluster as its answer; an unparsable body becomes its error.
core::MemberAnswer member_answer(HttpReply& reply) {
  if (reply.attempt.error.empty()) {
    auto v = core::parse_patroni_cluster(reply.body);
    if (v) {
      return {reply.attempt.url, std::move(*v)};
    }
    reply.attempt.error = util::format("unusable answer: {}", v.error());
  }
  return failed(reply.attempt);
}

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

// How long views are reused for, and why, for explain.
std::string max_age_said(const ShareSettings& share) {
  return share.automatic
             ? util::format("reused up to {} ms: half the time since this server's last check",
                            share.max_age.count())
             : util::format("reused up to {} ms: shared_view_max_age", share.max_age.count());
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
  step.answer = util::format("{} of {} members agreed {:.0f} ms ago (check pid {}; {}): {}",
                             shared->agreeing, shared->configured, shared->age_ms, shared->pid,
                             max_age_said(share), summarize(*view));
  ManagerResult r{
      std::move(*view), {std::move(step)}, 2 * shared->agreeing > shared->configured, true};
  if (node) {
    if (auto lookup = resolve_members(peers, *r.view, *node, deadline)) {
      r.steps.push_back(std::move(*lookup));
    }
  }
  return r;
}

// What the members' replies are kept for beyond the plan: each step's latency and error, and
// the body that is shared. By configured index; none for a member never asked.
using Replies = std::vector<std::optional<HttpReply>>;

// The own Patroni's view that named another leader, and the lookup of its names.
struct Denial {
  core::ClusterView view;
  std::optional<core::Step> lookup;
};

// One round: GET /cluster of the round's members at once, each answer handed to the plan as
// it comes, until the plan says the round may stop or `by`. The ones cut then are told too.
void ask_round(Peers& peers, const std::vector<std::string>& bases, const HttpOptions& tls,
               const core::PatroniRound& round, const Deadline& by, core::PatroniRounds& plan,
               Replies& replies) {
  std::vector<std::string> urls;
  for (const std::size_t i : round.members) {
    urls.push_back(bases[i] + "/cluster");
  }
  const Clock::time_point started = peers.now(); // every member of the round is asked now
  const EnoughFn enough = [&](std::size_t k, HttpReply& reply) {
    const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(peers.now() - started);
    return plan.take(round.members[k], member_answer(reply), took);
  };
  std::vector<HttpReply> got = peers.get_all(urls, tls, by, enough);
  for (std::size_t k = 0; k < round.members.size(); ++k) {
    const std::size_t i = round.members[k];
    if (!plan.finished(i)) {
      plan.cut(i, failed(got[k].attempt));
    }
    replies[i] = std::move(got[k]);
  }
}

// Asks the rounds `plan` sets, each bounded by its own wait and `deadline`; returns the own
// Patroni's denial when it ended the asking.
std::optional<Denial> ask_rounds(Peers& peers, const std::vector<std::string>& bases,
                                 const HttpOptions& tls, const std::optional<util::HostPort>& node,
                                 const Deadline& deadline, core::PatroniRounds& plan,
                                 Replies& replies) {
  for (;;) {
    const Clock::time_point now = peers.now();
    const auto round = plan.next(std::max(Clock::duration::zero(), deadline.at() - now));
    if (!round) {
      return std::nullopt;
    }
    ask_round(peers, bases, tls, *round, Deadline{std::min(deadline.at(), now + round->wait)}, plan,
              replies);
    if (const core::ClusterView* own = plan.own_view_to_check(); own != nullptr && node) {
      core::ClusterView copy = *own; // the others' views are compared with the own as advertised
      auto lookup = resolve_members(peers, copy, *node, deadline);
      if (plan.own_denies(copy, *node)) {
        return Denial{std::move(copy), std::move(lookup)};
      }
    }
  }
}

// One step per member, in asking order: what it said, why not, or that it was not needed.
std::vector<core::Step> member_steps(const std::vector<std::string>& bases,
                                     const core::PatroniRounds& plan, const Replies& replies) {
  std::vector<core::Step> steps;
  for (const std::size_t i : plan.order()) {
    core::Step step;
    step.opinion = "manager";
    step.asked = "GET /cluster";
    const auto& said = plan.answer(i);
    if (!said || !replies[i]) {
      step.peer = util::redact_url(bases[i] + "/cluster");
      step.answer = "not needed: the members asked first decided";
    } else {
      const HttpAttempt& a = replies[i]->attempt;
      step.peer = a.url;
      step.latency_ms = a.latency_ms;
      step.answer = said->view ? summarize(*said->view) : a.error;
    }
    steps.push_back(std::move(step));
  }
  return steps;
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
  const auto asked_at = peers.now(); // the shared view's age counts from here
  const std::size_t n = bases.size();
  core::PatroniRounds plan{n, node ? core::own_member(bases, *node) : std::nullopt,
                           own_denial_decides};
  Replies replies(n);
  std::optional<Denial> denial = ask_rounds(peers, bases, tls, node, deadline, plan, replies);
  std::vector<core::Step> steps = member_steps(bases, plan, replies);
  if (denial) {
    if (denial->lookup) {
      steps.push_back(std::move(*denial->lookup));
    }
    return ManagerResult{std::move(denial->view), std::move(steps), false};
  }
  core::PatroniElection e = core::elect_leader(plan.answers(), n);
  const bool quorum = e.view.has_value() && 2 * e.agreeing > e.configured;
  if (quorum && share.max_age.count() > 0) {
    if (const auto first = plan.first_agreeing(*e.view)) {
      SharedView v{replies[*first]->body, e.agreeing, n};
      v.asked_before = peers.now() - asked_at;
      peers.share_view(share, share_key(bases, tls), v);
    }
  }
  if (e.view && node) {
    if (auto step = resolve_members(peers, *e.view, *node, deadline)) {
      steps.push_back(std::move(*step));
    }
  }
  ManagerResult r{e.view, std::move(steps), quorum};
  r.none_answered = e.answered == 0;
  return r;
}

namespace {

// How a member's status is asked: its body is larger than a health answer.
HttpOptions status_options(const HttpOptions& tls) {
  HttpOptions options = tls;
  options.max_body = 256 * 1024;
  return options;
}

// A member's reply to GET /primary at `base` as its report (200 or 503 with a status body), or
// why it is none; `where` is added to the error. Fills `step`'s latency and answer.
tl::expected<core::LeaderReport, ProbeError> leader_report(const HttpReply& reply,
                                                           const std::string& base,
                                                           const std::string& where,
                                                           core::Step& step) {
  const HttpAttempt& a = reply.attempt;
  step.latency_ms = a.latency_ms;
  const bool answered = a.status == 200 || a.status == 503;
  if (!answered) {
    step.answer = a.error;
    return tl::make_unexpected(
        ProbeError{failure_kind(a), util::format("{}{}: {}", a.url, where, a.error), ""});
  }
  auto status = core::parse_patroni_status(reply.body);
  if (!status) {
    step.answer = util::format("HTTP {}, unusable answer: {}", a.status, status.error());
    return tl::make_unexpected(
        ProbeError{core::Failure::protocol,
                   util::format("{}: unusable answer: {}", a.url, status.error()), ""});
  }
  step.answer = util::format("HTTP {}: state {}, role {}{}{}", a.status, status->state,
                             status->role, status->name ? ", member " + *status->name : "",
                             status->failsafe_active ? ", failsafe mode active" : "");
  return core::LeaderReport{util::redact_url(base), a.status, std::move(*status)};
}

// GET /primary of the leader's own Patroni: 200 only while it holds the leader lock by its
// own clock; its body says whether PostgreSQL runs as primary.
tl::expected<core::LeaderReport, ProbeError>
ask_leader(Peers& peers, const core::PatroniMember& leader, const std::vector<std::string>& bases,
           const HttpOptions& tls, const Deadline& deadline, core::Step& step) {
  step.opinion = "manager";
  step.asked = "GET /primary";
  const auto base = core::leader_base(leader, bases);
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
  std::vector<HttpReply> replies =
      peers.get_all({base->url + "/primary"}, status_options(tls), deadline,
                    [](std::size_t, HttpReply&) { return false; });
  return leader_report(replies[0], base->url, util::format(" (asked at {})", base->why), step);
}

} // namespace

namespace {

// The members' view for a writer check, by `members_by`: a shared view naming `node` leader is
// set aside at once (it never confirms a writer), so the members are asked beside the node's
// own query, not after it (one after the other, the leader's check nears HAProxy's kill time).
ManagerResult writer_members(Peers& peers, const std::vector<std::string>& bases,
                             const HttpOptions& tls, const util::HostPort& node,
                             const Deadline& members_by, const ShareSettings& share) {
  ManagerResult m = ask_patroni(peers, bases, tls, node, members_by, true, share);
  if (m.view && m.shared) {
    const core::PatroniMember* named = core::find_leader(*m.view);
    if (named != nullptr && util::same_endpoint(named->address, node)) {
      core::Step aside = m.steps.front();
      aside.answer += "; set aside: it names this node leader, so the members are asked";
      m = ask_patroni(peers, bases, tls, node, members_by, true, share.asked_live());
      m.steps.insert(m.steps.begin(), std::move(aside));
    }
  }
  return m;
}

} // namespace

WriterManagerResult ask_patroni_for_writer(Peers& peers, const std::vector<std::string>& bases,
                                           const HttpOptions& tls, const util::HostPort& node,
                                           const Deadline& deadline, const ShareSettings& share) {
  const Deadline members_by = deadline.minus(reserve_for_last_step(deadline, peers.now()));
  WriterManagerResult r{writer_members(peers, bases, tls, node, members_by, share), std::nullopt};
  if (!r.members.view && r.members.none_answered && !bases.empty()) {
    r.outage = ask_patroni_outage(peers, bases, tls, node, deadline, r.members.steps);
    return r;
  }
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

core::OutageAnswers ask_patroni_outage(Peers& peers, const std::vector<std::string>& bases,
                                       const HttpOptions& tls, const util::HostPort& node,
                                       const Deadline& deadline, std::vector<core::Step>& steps) {
  std::vector<std::string> urls;
  for (const auto& b : bases) {
    urls.push_back(b + "/primary");
  }
  std::vector<HttpReply> replies = peers.get_all(urls, status_options(tls), deadline,
                                                 [](std::size_t, HttpReply&) { return false; });
  core::OutageAnswers out;
  out.own = core::own_member(bases, node);
  for (std::size_t i = 0; i < bases.size(); ++i) {
    core::Step step;
    step.opinion = "manager";
    step.asked = "GET /primary (no member answered GET /cluster)";
    step.peer = util::redact_url(bases[i]);
    out.answers.push_back({step.peer, leader_report(replies[i], bases[i], "", step)});
    steps.push_back(std::move(step));
  }
  return out;
}

ShareSettings patroni_sharing(const config::PostgresCluster& cluster) {
  const std::string dir = cluster.shared_view_dir.value_or("");
  if (cluster.shared_view_max_age) {
    return ShareSettings{dir, *cluster.shared_view_max_age, true, false};
  }
  // Shared at the longest age allowed; reused only once with_cadence() gives this check's.
  return ShareSettings{dir, config::k_max_shared_view_max_age, false, true};
}

ShareSettings with_cadence(Peers& peers, const ShareSettings& base, const std::string& who) {
  if (!base.automatic) {
    return base;
  }
  const auto age = core::auto_shared_view_max_age(peers.mark_check(base, who));
  return age ? ShareSettings{base.dir, *age, true, true} : base;
}

HttpOptions patroni_http(const config::PostgresCluster& cluster) {
  HttpOptions o;
  o.cafile = cluster.patroni_cafile;
  o.certfile = cluster.patroni_certfile;
  o.keyfile = cluster.patroni_keyfile;
  return o;
}

} // namespace dbcheck::probe
