#include "patroni_client.hpp"

#include "name_book.hpp"

#include <core/patroni_election.hpp>
#include <util/url.hpp>

#include <fmt/format.h>

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
    out += fmt::format("{}{} {} {} at {}{}", out.empty() ? "" : "; ", m.name, m.role, m.state,
                       util::to_string(m.address),
                       tags.empty() ? "" : fmt::format(" ({})", tags.substr(2)));
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

ManagerResult ask_patroni(Peers& peers, const std::vector<std::string>& bases,
                          const HttpOptions& tls, const std::optional<util::HostPort>& node,
                          const Deadline& deadline) {
  std::vector<std::string> urls;
  urls.reserve(bases.size());
  for (const auto& b : bases) {
    urls.push_back(b + "/cluster");
  }
  std::vector<core::MemberAnswer> answered;
  std::vector<std::optional<core::ClusterView>> views(urls.size());
  const HttpOptions& options = tls;
  const EnoughFn enough = [&](std::size_t i, HttpReply& reply) {
    if (reply.attempt.error.empty()) {
      auto v = core::parse_patroni_cluster(reply.body);
      if (v) {
        views[i] = std::move(*v);
        answered.push_back({reply.attempt.url, *views[i]});
      } else {
        reply.attempt.error = fmt::format("unusable answer: {}", v.error());
      }
    }
    return core::election_decided(answered, bases.size());
  };
  std::vector<HttpReply> replies = peers.get_all(urls, options, deadline, enough);

  std::vector<core::Step> steps;
  std::vector<core::MemberAnswer> answers;
  for (std::size_t i = 0; i < replies.size(); ++i) {
    const HttpAttempt& a = replies[i].attempt;
    core::Step step;
    step.opinion = "manager";
    step.asked = "GET /cluster";
    step.peer = a.url;
    step.latency_ms = a.latency_ms;
    if (views[i]) {
      step.answer = summarize(*views[i]);
      answers.push_back({a.url, std::move(*views[i])});
    } else {
      step.answer = a.error;
      const core::Failure kind = a.timed_out     ? core::Failure::timeout
                                 : a.status != 0 ? core::Failure::protocol
                                                 : core::Failure::network;
      answers.push_back({a.url, tl::make_unexpected(ProbeError{kind, a.error, ""})});
    }
    steps.push_back(std::move(step));
  }
  core::PatroniElection e = core::elect_leader(answers, bases.size());
  const bool quorum = e.view.has_value() && 2 * e.agreeing > e.configured;
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
    const auto o = util::url_origin(b);
    const auto host_start = o ? o->find("://") : std::string::npos;
    const auto port_colon = o ? o->rfind(':') : std::string::npos;
    if (host_start != std::string::npos && port_colon != std::string::npos) {
      std::string host = o->substr(host_start + 3, port_colon - host_start - 3);
      if (host.size() > 2 && host.front() == '[') {
        host = host.substr(1, host.size() - 2);
      }
      if (util::same_endpoint(util::HostPort{host, 1}, util::HostPort{leader.address.host, 1}) ||
          (!leader.advertised.empty() &&
           util::same_endpoint(util::HostPort{host, 1}, util::HostPort{leader.advertised, 1}))) {
        return LeaderBase{b, fmt::format("the configured URL on its host, not its api_url \"{}\"",
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
    step.answer = fmt::format("no usable REST API address (api_url \"{}\")",
                              util::redact_url(leader.api_url));
    return tl::make_unexpected(ProbeError{
        core::Failure::protocol,
        fmt::format("no configured URL is on its host and the members list no usable api_url "
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
        ProbeError{kind, fmt::format("{} (asked at {}): {}", a.url, base->why, a.error), ""});
  }
  auto status = core::parse_patroni_status(replies[0].body);
  if (!status) {
    step.answer = fmt::format("HTTP {}, unusable answer: {}", a.status, status.error());
    return tl::make_unexpected(
        ProbeError{core::Failure::protocol,
                   fmt::format("{}: unusable answer: {}", a.url, status.error()), ""});
  }
  step.answer = fmt::format("HTTP {}: state {}, role {}{}", a.status, status->state, status->role,
                            status->name ? ", member " + *status->name : "");
  return core::LeaderReport{util::redact_url(base->url), a.status, std::move(*status)};
}

} // namespace

WriterManagerResult ask_patroni_for_writer(Peers& peers, const std::vector<std::string>& bases,
                                           const HttpOptions& tls, const util::HostPort& node,
                                           const Deadline& deadline) {
  WriterManagerResult r{
      ask_patroni(peers, bases, tls, node, deadline.minus(reserve_for_last_step(deadline))),
      std::nullopt};
  if (!r.members.view) {
    return r;
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

HttpOptions patroni_http(const config::PostgresCluster& cluster) {
  HttpOptions o;
  o.cafile = cluster.patroni_cafile;
  o.certfile = cluster.patroni_certfile;
  o.keyfile = cluster.patroni_keyfile;
  return o;
}

} // namespace dbcheck::probe
