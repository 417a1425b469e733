#include "pg_check.hpp"

#include "async.hpp"
#include "deadline.hpp"
#include "http_client.hpp"
#include "pg_session.hpp"

#include <core/lsn.hpp>
#include <core/patroni_cluster.hpp>
#include <core/pg_verdict.hpp>

#include <fmt/format.h>

#include <memory>
#include <thread>

namespace dbcheck::probe {
namespace {

using core::ProbeError;
using namespace std::chrono_literals;

constexpr const char* k_writer_sql =
    "SELECT pg_is_in_recovery(), current_setting('transaction_read_only')";
constexpr const char* k_sample_sql = "SELECT pg_current_wal_lsn()";
constexpr const char* k_replica_sql =
    "SELECT pg_is_in_recovery(), EXISTS (SELECT 1 FROM pg_stat_wal_receiver), "
    "(SELECT status FROM pg_stat_wal_receiver), "
    "CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() ELSE false END, "
    "pg_last_wal_replay_lsn(), "
    "extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())";
constexpr const char* k_replay_sql =
    "SELECT pg_last_wal_replay_lsn(), "
    "extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())";

struct ManagerResult {
  tl::expected<core::ClusterView, ProbeError> view;
  core::Step step;
};

struct SampleResult {
  std::optional<core::Lsn> lsn;
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

ManagerResult ask_patroni(const std::vector<std::string>& bases,
                          const std::optional<std::string>& cafile, const Deadline& deadline) {
  std::vector<std::string> urls;
  urls.reserve(bases.size());
  for (const auto& b : bases) {
    urls.push_back(b + "/cluster");
  }
  std::optional<core::ClusterView> parsed;
  const AcceptFn accept = [&parsed](const std::string& body) -> std::string {
    auto v = core::parse_patroni_cluster(body);
    if (!v) {
      return fmt::format("unusable answer: {}", v.error());
    }
    parsed = std::move(*v);
    return {};
  };
  HttpOptions options;
  options.cafile = cafile;
  const HttpOutcome out = get_first_accepted(urls, accept, options, deadline);

  ManagerResult r{tl::make_unexpected(ProbeError{}), {}};
  r.step.opinion = "manager";
  r.step.asked = "GET /cluster";
  if (out.accepted && parsed) {
    const HttpAttempt& a = out.attempts[*out.accepted];
    r.step.peer = a.url;
    r.step.latency_ms = a.latency_ms;
    r.step.answer = summarize(*parsed);
    r.view = std::move(*parsed);
    return r;
  }
  bool all_timed_out = !out.attempts.empty();
  bool any_answer = false;
  std::string detail;
  double latency = 0;
  for (const auto& a : out.attempts) {
    all_timed_out = all_timed_out && a.timed_out;
    any_answer = any_answer || a.status != 0;
    latency = std::max(latency, a.latency_ms);
    detail += fmt::format("{}{}: {}", detail.empty() ? "" : "; ", a.url, a.error);
  }
  const core::Failure kind = all_timed_out ? core::Failure::timeout
                             : any_answer  ? core::Failure::protocol
                                           : core::Failure::network;
  const std::string lead = all_timed_out ? "timeout: no Patroni member answered before the deadline"
                                         : "no Patroni member gave a usable answer";
  r.view = tl::make_unexpected(ProbeError{kind, fmt::format("{} ({})", lead, detail), ""});
  r.step.peer = fmt::format("{} member(s)", bases.size());
  r.step.answer = r.view.error().detail;
  r.step.latency_ms = latency;
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

// Connect + query on one node, timed, as one step.
struct NodeQuery {
  tl::expected<std::vector<PgRow>, ProbeError> rows;
  core::Step step;
};

core::Step node_step(const std::string& opinion, const util::HostPort& addr, const char* sql) {
  core::Step s;
  s.opinion = opinion;
  s.peer = util::to_string(addr);
  s.asked = sql;
  return s;
}

// ---------------------------------------------------------------- writer

core::Report check_writer(const config::PostgresCluster& cluster, const config::Backend& backend,
                          const util::HostPort& node, const Deadline& deadline) {
  auto manager = spawn([bases = cluster.patroni, cafile = cluster.patroni_cafile, deadline] {
    return ask_patroni(bases, cafile, deadline);
  });

  core::Step nstep = node_step("node", node, k_writer_sql);
  const auto t0 = Clock::now();
  tl::expected<core::NodeRole, ProbeError> role = tl::make_unexpected(ProbeError{});
  auto session = PgSession::connect(target_for(cluster, node), deadline);
  if (!session) {
    role = tl::make_unexpected(session.error());
  } else if (auto rows = session->query(k_writer_sql, {}, deadline); !rows) {
    role = tl::make_unexpected(rows.error());
  } else {
    const auto in_recovery =
        rows->size() == 1 && (*rows)[0].size() == 2 ? parse_bool((*rows)[0][0]) : std::nullopt;
    const auto read_only =
        rows->size() == 1 && (*rows)[0].size() == 2 ? parse_bool((*rows)[0][1]) : std::nullopt;
    if (!in_recovery || !read_only) {
      role = tl::make_unexpected(bad_rows("the writer query"));
    } else {
      role = core::NodeRole{*in_recovery, *read_only};
      nstep.answer = fmt::format("pg_is_in_recovery={}, transaction_read_only={}",
                                 *in_recovery ? "t" : "f", *read_only ? "on" : "off");
    }
  }
  nstep.latency_ms = elapsed_ms(t0, Clock::now());
  if (!role) {
    nstep.answer = role.error().detail;
  }

  core::WriterObservation obs{node, tl::make_unexpected(ProbeError{}), std::move(role)};
  core::Report report;
  if (manager.wait_until(deadline.at() + k_grace) == std::future_status::ready) {
    ManagerResult m = manager.get();
    obs.manager = std::move(m.view);
    report.steps.push_back(std::move(m.step));
  } else {
    obs.manager = tl::make_unexpected(ProbeError{
        core::Failure::timeout, "timeout: the Patroni query did not finish by the deadline", ""});
  }
  report.steps.push_back(std::move(nstep));
  report.verdict = core::evaluate_writer(obs, backend.on_saturation);
  return report;
}

// ---------------------------------------------------------------- replica

SampleResult sample_leader(const config::PostgresCluster& cluster, const core::ClusterView& view,
                           const util::HostPort& node, const Deadline& deadline) {
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
  auto session = PgSession::connect(target_for(cluster, leader->address), deadline);
  if (!session) {
    s.problem = fmt::format("leader {}: {}", leader->name, session.error().detail);
  } else {
    s.sent = Clock::now();
    auto rows = session->query(k_sample_sql, {}, deadline);
    if (!rows) {
      s.problem = fmt::format("leader {}: {}", leader->name, rows.error().detail);
    } else if (rows->size() != 1 || (*rows)[0].size() != 1 || !(*rows)[0][0] ||
               !core::parse_lsn(*(*rows)[0][0])) {
      s.problem = fmt::format("leader {}: unexpected answer to {}", leader->name, k_sample_sql);
    } else {
      s.lsn = core::parse_lsn(*(*rows)[0][0]);
      step.answer = fmt::format("pg_current_wal_lsn={}", *(*rows)[0][0]);
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

std::optional<double> parse_double(const std::optional<std::string>& v) {
  if (!v) {
    return std::nullopt;
  }
  try {
    return std::stod(*v);
  } catch (...) {
    return std::nullopt;
  }
}

core::Report check_replica(const config::PostgresCluster& cluster, const config::Backend& backend,
                           const util::HostPort& node, const Deadline& deadline) {
  // The manager's view and then the primary's WAL position, on one thread; meanwhile this
  // thread connects to the replica, and queries it only after the sample (the order is what
  // makes the lag bound sound).
  auto manager = spawn([cluster, node, deadline] {
    ManagerResult m = ask_patroni(cluster.patroni, cluster.patroni_cafile, deadline);
    SampleResult s;
    if (m.view) {
      s = sample_leader(cluster, *m.view, node, deadline);
    } else {
      s.problem = "no view from Patroni";
    }
    return std::make_pair(std::move(m), std::move(s));
  });

  core::Step nstep = node_step("node", node, k_replica_sql);
  const auto t0 = Clock::now();
  auto session = PgSession::connect(target_for(cluster, node), deadline);

  core::Report report;
  core::ReplicaObservation obs{
      node, tl::make_unexpected(ProbeError{}), tl::make_unexpected(ProbeError{}), {}};
  SampleResult sample;
  if (manager.wait_until(deadline.at() + k_grace) == std::future_status::ready) {
    auto [m, s] = manager.get();
    obs.manager = std::move(m.view);
    report.steps.push_back(std::move(m.step));
    sample = std::move(s);
    if (sample.step) {
      report.steps.push_back(*sample.step);
    }
  } else {
    obs.manager = tl::make_unexpected(ProbeError{
        core::Failure::timeout, "timeout: the Patroni query did not finish by the deadline", ""});
    sample.problem = "timeout";
  }

  core::LagEvidence evidence;
  evidence.primary_sampled = sample.lsn.has_value();
  evidence.primary_problem = sample.problem;
  int polls = 0;
  if (!session) {
    obs.node_answer = tl::make_unexpected(session.error());
  } else if (auto rows = session->query(k_replica_sql, {}, deadline); !rows) {
    obs.node_answer = tl::make_unexpected(rows.error());
  } else if (rows->size() != 1 || (*rows)[0].size() != 6 || !parse_bool((*rows)[0][0]) ||
             !parse_bool((*rows)[0][1]) || !parse_bool((*rows)[0][3])) {
    obs.node_answer = tl::make_unexpected(bad_rows("the replica query"));
  } else {
    const PgRow& row = (*rows)[0];
    core::ReplicaStatus st;
    st.in_recovery = *parse_bool(row[0]);
    st.receiver_present = *parse_bool(row[1]);
    st.receiver_status = row[2];
    st.replay_paused = *parse_bool(row[3]);
    ReplayReading reading{row[4] ? core::parse_lsn(*row[4]) : std::nullopt, parse_double(row[5]),
                          Clock::now()};
    ++polls;
    // Under a write burst the replica may be a few milliseconds behind the sample: watch it
    // catch up, leaving a little time before the deadline to decide and report. Stop early
    // when waiting cannot help: replay is paused, or the sample is already max_lag old (a
    // catch-up after that could not bound the lag below max_lag anyway).
    const Deadline poll_until{
        std::min(deadline.minus(15ms).at(),
                 sample.sent + std::chrono::duration_cast<Clock::duration>(backend.max_lag))};
    while (sample.lsn && st.in_recovery && !st.replay_paused && reading.replay &&
           *reading.replay < *sample.lsn && !poll_until.expired()) {
      std::this_thread::sleep_for(std::min<Clock::duration>(5ms, poll_until.remaining()));
      auto again = session->query(k_replay_sql, {}, deadline);
      if (!again || again->size() != 1 || (*again)[0].size() != 2) {
        break;
      }
      reading = ReplayReading{(*again)[0][0] ? core::parse_lsn(*(*again)[0][0]) : std::nullopt,
                              parse_double((*again)[0][1]), Clock::now()};
      ++polls;
    }
    evidence.since_last_replay_s = reading.since_last_replay_s;
    if (sample.lsn && reading.replay) {
      const double after = std::chrono::duration<double>(reading.at - sample.sent).count();
      if (*reading.replay >= *sample.lsn) {
        evidence.caught_up_after_s = after;
      } else {
        evidence.behind_for_s = after;
      }
    }
    nstep.answer = fmt::format(
        "in_recovery={}, wal_receiver={}, replay_paused={}, replay_lsn={}, "
        "last_replayed_commit_age={}{}",
        st.in_recovery ? "t" : "f",
        st.receiver_present ? st.receiver_status.value_or("(hidden)") : "none",
        st.replay_paused ? "t" : "f", lsn_text(reading.replay),
        reading.since_last_replay_s ? util::format_seconds(*reading.since_last_replay_s) : "null",
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
                            const util::HostPort& node, const Deadline& deadline) {
  return backend.role == config::Role::primary ? check_writer(cluster, backend, node, deadline)
                                               : check_replica(cluster, backend, node, deadline);
}

} // namespace dbcheck::probe
