#include "pg_check.hpp"

#include "async.hpp"
#include "connection_cache.hpp"
#include "deadline.hpp"
#include "http_client.hpp"
#include "pg_session.hpp"

#include <core/lsn.hpp>
#include <core/patroni_cluster.hpp>
#include <core/patroni_election.hpp>
#include <core/pg_verdict.hpp>
#include <util/url.hpp>

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <memory>
#include <thread>

namespace dbcheck::probe {
namespace {

using core::ProbeError;
using namespace std::chrono_literals;

// The connection count matters to the agent, whose kept connection still works when the
// server is full. PostgreSQL refuses a non-superuser once all client backends (superusers'
// included) fill max_connections less the reserved slots: count them all.
constexpr const char* k_writer_sql =
    "SELECT pg_is_in_recovery(), current_setting('transaction_read_only'), "
    "(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'), "
    "current_setting('max_connections')::int - "
    "current_setting('superuser_reserved_connections')::int";
// The timeline is the first 8 hex digits of the current WAL file's name.
constexpr const char* k_sample_sql =
    "SELECT pg_current_wal_lsn(), substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)";
constexpr const char* k_replica_sql =
    "SELECT pg_is_in_recovery(), EXISTS (SELECT 1 FROM pg_stat_wal_receiver), "
    "(SELECT status FROM pg_stat_wal_receiver), "
    "CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() ELSE false END, "
    "pg_last_wal_replay_lsn(), "
    "extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()), "
    "(SELECT received_tli FROM pg_stat_wal_receiver)";
constexpr const char* k_replay_sql =
    "SELECT pg_last_wal_replay_lsn(), "
    "extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())";

struct ManagerResult {
  tl::expected<core::ClusterView, ProbeError> view; // the view the members agree on
  std::vector<core::Step> steps;                    // one per member asked
  bool quorum = false; // the agreeing members are more than half of those configured
};

struct SampleResult {
  std::optional<core::Lsn> lsn;
  std::optional<std::uint32_t> timeline;
  Clock::time_point sent{};
  std::string problem;
  std::optional<core::Step> step;
};

PgTarget target_for(const config::PostgresCluster& c, const util::HostPort& address) {
  return PgTarget{address, c.dbname, c.user, c.password.reveal(), c.sslmode, c.sslrootcert};
}

std::string summarize(const core::ClusterView& view) {
  std::string out;
  for (const auto& m : view.members) {
    out += fmt::format("{}{} {} {} at {}{}", out.empty() ? "" : "; ", m.name, m.role, m.state,
                       util::to_string(m.address), m.noloadbalance ? " (noloadbalance)" : "");
  }
  if (out.empty()) {
    out = "no members";
  }
  return view.paused ? out + "; cluster paused" : out;
}

// GET /cluster of every member at once, until more than half of them agree (or all have
// answered, or the deadline); the members' agreement decides (core/patroni_election.hpp).
ManagerResult ask_patroni(const std::vector<std::string>& bases,
                          const std::optional<std::string>& cafile, const Deadline& deadline) {
  std::vector<std::string> urls;
  urls.reserve(bases.size());
  for (const auto& b : bases) {
    urls.push_back(b + "/cluster");
  }
  std::vector<core::MemberAnswer> answered;
  std::vector<std::optional<core::ClusterView>> views(urls.size());
  HttpOptions options;
  options.cafile = cafile;
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
  std::vector<HttpReply> replies = get_all(urls, options, deadline, enough);

  ManagerResult r{tl::make_unexpected(ProbeError{}), {}};
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
    r.steps.push_back(std::move(step));
  }
  const core::PatroniElection e = core::elect_leader(answers, bases.size());
  r.view = e.view;
  r.quorum = e.view.has_value() && 2 * e.agreeing > e.configured;
  return r;
}

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
      if (util::same_endpoint(util::HostPort{host, 1}, util::HostPort{leader.address.host, 1})) {
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
ask_leader(const core::PatroniMember& leader, const std::vector<std::string>& bases,
           const std::optional<std::string>& cafile, const Deadline& deadline, core::Step& step) {
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
  HttpOptions options;
  options.cafile = cafile;
  options.max_body = 256 * 1024;
  std::vector<HttpReply> replies = get_all({base->url + "/primary"}, options, deadline,
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

// The members' view, and when they name `node` leader, its own Patroni's report.
struct WriterManagerResult {
  ManagerResult members;
  std::optional<tl::expected<core::LeaderReport, ProbeError>> leader_report;
};

WriterManagerResult ask_patroni_for_writer(const std::vector<std::string>& bases,
                                           const std::optional<std::string>& cafile,
                                           const util::HostPort& node, const Deadline& deadline) {
  // The members may take most of the time; the leader's own answer gets what they leave, but
  // at least a quarter (a hung member must not starve the confirmation).
  WriterManagerResult r{ask_patroni(bases, cafile, deadline.minus(reserve_for_last_step(deadline))),
                        std::nullopt};
  if (!r.members.view) {
    return r;
  }
  const core::PatroniMember* leader = core::find_leader(*r.members.view);
  if (leader == nullptr || !util::same_endpoint(leader->address, node)) {
    return r; // not this node: nothing to confirm
  }
  core::Step step;
  const auto t0 = Clock::now();
  r.leader_report = ask_leader(*leader, bases, cafile, deadline, step);
  step.latency_ms = elapsed_ms(t0, Clock::now());
  r.members.steps.push_back(std::move(step));
  return r;
}

std::optional<bool> parse_bool(const std::optional<std::string>& v) {
  if (v == "t" || v == "on") {
    return true;
  }
  if (v == "f" || v == "off") {
    return false;
  }
  return std::nullopt;
}

ProbeError bad_rows(std::string_view what) {
  return ProbeError{core::Failure::protocol, fmt::format("unexpected answer to {}", what), ""};
}

// A finite number, or nullopt for anything else ("nan", "inf", "12abc", "").
std::optional<double> parse_finite(const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

// A timeline from the first 8 hex digits of a WAL file name ("00000003").
std::optional<std::uint32_t> parse_timeline(const std::string& hex) {
  std::uint32_t v = 0;
  const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), v, 16);
  if (hex.size() != 8 || ec != std::errc{} || end != hex.data() + hex.size() || v == 0) {
    return std::nullopt;
  }
  return v;
}

core::Step node_step(const std::string& opinion, const util::HostPort& addr, const char* sql) {
  core::Step s;
  s.opinion = opinion;
  s.peer = util::to_string(addr);
  s.asked = sql;
  return s;
}

// ---------------------------------------------------------------- writer

core::Report check_writer(const config::PostgresCluster& cluster, const config::Backend& backend,
                          const util::HostPort& node, const Deadline& deadline,
                          ConnectionCache* cache) {
  auto manager = spawn([bases = cluster.patroni, cafile = cluster.patroni_cafile, node, deadline] {
    return ask_patroni_for_writer(bases, cafile, node, deadline);
  });

  core::Step nstep = node_step("node", node, k_writer_sql);
  const auto t0 = Clock::now();
  tl::expected<core::NodeRole, ProbeError> role = tl::make_unexpected(ProbeError{});
  PgLease session(cache, target_for(cluster, node));
  if (auto opened = session.open(deadline); !opened) {
    role = tl::make_unexpected(opened.error());
  } else if (auto rows = session.query(k_writer_sql, {}, deadline); !rows) {
    role = tl::make_unexpected(rows.error());
  } else {
    const bool shaped = rows->size() == 1 && (*rows)[0].size() == 4;
    const auto in_recovery = shaped ? parse_bool((*rows)[0][0]) : std::nullopt;
    const auto read_only = shaped ? parse_bool((*rows)[0][1]) : std::nullopt;
    const auto used = shaped && (*rows)[0][2] ? parse_finite(*(*rows)[0][2]) : std::nullopt;
    const auto limit = shaped && (*rows)[0][3] ? parse_finite(*(*rows)[0][3]) : std::nullopt;
    if (!in_recovery || !read_only || !used || !limit) {
      role = tl::make_unexpected(bad_rows("the writer query"));
    } else {
      role = core::NodeRole{*in_recovery, *read_only, static_cast<int>(*used),
                            static_cast<int>(*limit)};
      nstep.answer =
          fmt::format("pg_is_in_recovery={}, transaction_read_only={}, connections {} of {}",
                      *in_recovery ? "t" : "f", *read_only ? "on" : "off", *used, *limit);
    }
  }
  nstep.latency_ms = elapsed_ms(t0, Clock::now());
  if (!role) {
    nstep.answer = role.error().detail;
  }

  core::WriterObservation obs{node, tl::make_unexpected(ProbeError{}), std::move(role), {}};
  core::Report report;
  if (manager.wait_until(deadline.at() + k_grace) == std::future_status::ready) {
    WriterManagerResult m = manager.get();
    obs.manager = std::move(m.members.view);
    obs.leader_report = std::move(m.leader_report);
    obs.quorum = m.members.quorum;
    for (auto& step : m.members.steps) {
      report.steps.push_back(std::move(step));
    }
  } else {
    obs.manager = tl::make_unexpected(ProbeError{
        core::Failure::timeout, "timeout: the Patroni query did not finish by the deadline", ""});
  }
  report.steps.push_back(std::move(nstep));
  report.verdict = core::evaluate_writer(obs, backend.on_saturation);
  return report;
}

// ---------------------------------------------------------------- replica

// The leader's WAL position and timeline, and when they were asked for.
SampleResult sample_leader(const config::PostgresCluster& cluster, const core::ClusterView& view,
                           const util::HostPort& node, const Deadline& deadline,
                           ConnectionCache* cache) {
  SampleResult s;
  const core::PatroniMember* leader = core::find_leader(view);
  if (leader == nullptr) {
    s.problem = "Patroni names no leader";
    return s;
  }
  if (util::same_endpoint(leader->address, node)) {
    s.problem = "this node is the leader";
    return s;
  }
  core::Step step = node_step("primary_sample", leader->address, k_sample_sql);
  const auto t0 = Clock::now();
  PgLease session(cache, target_for(cluster, leader->address));
  if (auto opened = session.open(deadline); !opened) {
    s.problem = fmt::format("leader {}: {}", leader->name, opened.error().detail);
  } else {
    s.sent = Clock::now();
    auto rows = session.query(k_sample_sql, {}, deadline);
    const auto lsn = rows && rows->size() == 1 && (*rows)[0].size() == 2 && (*rows)[0][0]
                         ? core::parse_lsn(*(*rows)[0][0])
                         : std::nullopt;
    const auto tli = rows && lsn && (*rows)[0][1] ? parse_timeline(*(*rows)[0][1]) : std::nullopt;
    if (!rows) {
      s.problem = fmt::format("leader {}: {}", leader->name, rows.error().detail);
    } else if (!lsn || !tli) {
      s.problem = fmt::format("leader {}: unexpected answer to {}", leader->name, k_sample_sql);
    } else {
      s.lsn = lsn;
      s.timeline = tli;
      step.answer = fmt::format("pg_current_wal_lsn={}, timeline {}", *(*rows)[0][0], *tli);
    }
  }
  step.latency_ms = elapsed_ms(t0, Clock::now());
  if (!s.lsn) {
    step.answer = s.problem;
  }
  s.step = std::move(step);
  return s;
}

struct ReplayReading {
  std::optional<core::Lsn> replay;
  std::optional<double> since_last_replay_s;
  Clock::time_point at;
};

std::string lsn_text(const std::optional<core::Lsn>& lsn) {
  return lsn.has_value() ? core::format_lsn(lsn.value()) : std::string{"null"};
}

// Reads replay LSN and last-replay age from two columns; NULL stays nullopt, garbage is an error.
tl::expected<ReplayReading, ProbeError> read_replay(const std::optional<std::string>& lsn,
                                                    const std::optional<std::string>& age) {
  ReplayReading r{std::nullopt, std::nullopt, Clock::now()};
  if (lsn) {
    r.replay = core::parse_lsn(*lsn);
    if (!r.replay) {
      return tl::make_unexpected(bad_rows("pg_last_wal_replay_lsn()"));
    }
  }
  if (age) {
    r.since_last_replay_s = parse_finite(*age);
    if (!r.since_last_replay_s) {
      return tl::make_unexpected(bad_rows("pg_last_xact_replay_timestamp()"));
    }
  }
  return r;
}

core::Report check_replica(const config::PostgresCluster& cluster, const config::Backend& backend,
                           const util::HostPort& node, const Deadline& deadline,
                           ConnectionCache* cache) {
  // The members get what the replica's own query leaves: a hung member (no majority yet)
  // must not starve the query and take every healthy replica out.
  const Deadline members_by = deadline.minus(reserve_for_last_step(deadline));
  auto manager = spawn([bases = cluster.patroni, cafile = cluster.patroni_cafile, members_by] {
    return ask_patroni(bases, cafile, members_by);
  });
  core::Step nstep = node_step("node", node, k_replica_sql);
  const auto t0 = Clock::now();
  PgLease session(cache, target_for(cluster, node));
  const auto opened = session.open(deadline); // meanwhile Patroni

  core::Report report;
  core::ReplicaObservation obs{
      node, tl::make_unexpected(ProbeError{}), tl::make_unexpected(ProbeError{}), {}, {}};
  SampleResult sample;
  if (manager.wait_until(deadline.at() + k_grace) == std::future_status::ready) {
    ManagerResult m = manager.get();
    obs.manager = std::move(m.view);
    for (auto& step : m.steps) {
      report.steps.push_back(std::move(step));
    }
  } else {
    obs.manager = tl::make_unexpected(ProbeError{
        core::Failure::timeout, "timeout: the Patroni query did not finish by the deadline", ""});
  }
  // Sample the leader first and read the replica after: the order makes the bound sound. The
  // sample gets an earlier deadline, so a hung leader cannot starve the replica's own query
  // (and take every healthy replica out of rotation with a reason that blames the replica).
  if (obs.manager && opened) {
    sample = sample_leader(cluster, *obs.manager, node,
                           deadline.minus(reserve_for_last_step(deadline)), cache);
    if (sample.step) {
      report.steps.push_back(*sample.step);
    }
  } else {
    sample.problem = obs.manager ? "the replica did not answer" : "no view from Patroni";
  }
  obs.leader_timeline = sample.timeline;

  core::LagEvidence evidence;
  evidence.primary_sampled = sample.lsn.has_value();
  evidence.primary_problem = sample.problem;
  int polls = 0;
  auto rows =
      opened ? session.query(k_replica_sql, {}, deadline)
             : tl::expected<std::vector<PgRow>, ProbeError>(tl::make_unexpected(opened.error()));
  const bool shaped = rows && rows->size() == 1 && (*rows)[0].size() == 7 &&
                      parse_bool((*rows)[0][0]) && parse_bool((*rows)[0][1]) &&
                      parse_bool((*rows)[0][3]);
  auto reading = shaped ? read_replay((*rows)[0][4], (*rows)[0][5])
                        : tl::expected<ReplayReading, ProbeError>(tl::make_unexpected(
                              rows ? bad_rows("the replica query") : rows.error()));
  const auto received_tli = shaped && (*rows)[0][6] ? parse_finite(*(*rows)[0][6]) : std::nullopt;
  if (!reading) {
    obs.node_answer = tl::make_unexpected(reading.error());
  } else if (shaped && (*rows)[0][6] && !received_tli) {
    obs.node_answer = tl::make_unexpected(bad_rows("pg_stat_wal_receiver.received_tli"));
  } else {
    const PgRow& row = (*rows)[0];
    core::ReplicaStatus st;
    st.in_recovery = *parse_bool(row[0]);
    st.receiver_present = *parse_bool(row[1]);
    st.receiver_status = row[2];
    st.replay_paused = *parse_bool(row[3]);
    if (received_tli) {
      st.received_timeline = static_cast<std::uint32_t>(*received_tli);
    }
    ++polls;
    // LSNs compare only within one timeline.
    const bool comparable = sample.lsn && st.received_timeline == sample.timeline;
    // Under a write burst the replica may be a few milliseconds behind the sample: watch it
    // catch up, leaving a little time before the deadline to decide and report. Stop early
    // when waiting cannot help: replay is paused, or the sample is already max_lag old (a
    // catch-up after that could not bound the lag below max_lag anyway).
    const Deadline poll_until{
        std::min(deadline.minus(15ms).at(),
                 sample.sent + std::chrono::duration_cast<Clock::duration>(backend.max_lag))};
    while (comparable && st.in_recovery && !st.replay_paused && reading->replay &&
           *reading->replay < *sample.lsn && !poll_until.expired()) {
      std::this_thread::sleep_for(std::min<Clock::duration>(5ms, poll_until.remaining()));
      auto again = session.query(k_replay_sql, {}, deadline);
      if (!again || again->size() != 1 || (*again)[0].size() != 2) {
        break;
      }
      auto next = read_replay((*again)[0][0], (*again)[0][1]);
      if (!next) {
        break;
      }
      reading = std::move(next);
      ++polls;
    }
    evidence.since_last_replay_s = reading->since_last_replay_s;
    if (comparable && reading->replay) {
      const double after = std::chrono::duration<double>(reading->at - sample.sent).count();
      if (*reading->replay >= *sample.lsn) {
        evidence.caught_up_after_s = after;
      } else {
        evidence.behind_for_s = after;
      }
    }
    nstep.answer = fmt::format(
        "in_recovery={}, wal_receiver={}, received_timeline={}, replay_paused={}, "
        "replay_lsn={}, last_replayed_commit_age={}{}",
        st.in_recovery ? "t" : "f",
        st.receiver_present ? st.receiver_status.value_or("(hidden)") : "none",
        st.received_timeline ? std::to_string(*st.received_timeline) : "null",
        st.replay_paused ? "t" : "f", lsn_text(reading->replay),
        reading->since_last_replay_s ? util::format_seconds(*reading->since_last_replay_s) : "null",
        polls > 1 ? fmt::format(" (replay polled {} times)", polls) : "");
    obs.node_answer = st;
  }
  nstep.latency_ms = elapsed_ms(t0, Clock::now());
  if (!obs.node_answer) {
    nstep.answer = obs.node_answer.error().detail;
  }
  report.steps.push_back(std::move(nstep));
  obs.lag = core::estimate_lag(evidence);
  report.lag = obs.lag;
  report.verdict =
      core::evaluate_replica(obs, std::chrono::duration<double>(backend.max_lag).count());
  return report;
}

} // namespace

core::Report check_postgres(const config::PostgresCluster& cluster, const config::Backend& backend,
                            const util::HostPort& node, const Deadline& deadline,
                            const std::shared_ptr<ConnectionCache>& cache) {
  return backend.role == config::Role::primary
             ? check_writer(cluster, backend, node, deadline, cache.get())
             : check_replica(cluster, backend, node, deadline, cache.get());
}

tl::expected<core::ClusterView, core::ProbeError>
patroni_view(const config::PostgresCluster& cluster, const Deadline& deadline) {
  return ask_patroni(cluster.patroni, cluster.patroni_cafile, deadline).view;
}

} // namespace dbcheck::probe
