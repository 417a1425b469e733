#include "pg_check.hpp"

#include "async.hpp"
#include "catch_up.hpp"
#include "disk_space.hpp"
#include "leader_sample.hpp"
#include "opinion_wait.hpp"
#include "patroni_client.hpp"
#include "standby_source.hpp"
#include "write_probe.hpp"

#include <core/patroni_election.hpp>
#include <core/pg_rows.hpp>
#include <core/pg_verdict.hpp>
#include <core/shared_view.hpp>
#include <util/format.hpp>

#include <memory>

namespace dbcheck::probe {
namespace {

using core::ProbeError;

// The name this check's marks are kept under: its backend and server (with_cadence()).
std::string mark_key(const config::Backend& backend, const util::HostPort& node) {
  return core::check_mark_key(backend.name, util::to_string(node));
}

constexpr std::string_view k_patroni_step = "the Patroni query";

// What the check offers the node to log in with, for `explain`: the user and the files, never
// their content. The server's pg_hba chooses among them (trust needs none).
std::string auth_words(const config::PostgresCluster& c) {
  std::string out = util::format("user {}: ", c.user);
  if (c.sslcert) {
    out += util::format("client certificate {}", *c.sslcert);
  }
  if (c.password_file) {
    out += util::format("{}password from {}", c.sslcert ? ", " : "", *c.password_file);
  }
  if (!c.sslcert && !c.password_file) {
    out += "no certificate, no password (only pg_hba's trust lets it in)";
  }
  return out;
}

// ---------------------------------------------------------------- writer

// The node's own opinion: the writer query on `node`.
tl::expected<core::NodeRole, ProbeError> ask_writer_node(PgPeer& session,
                                                         const Deadline& deadline) {
  if (auto opened = session.open(deadline); !opened) {
    return tl::make_unexpected(opened.error());
  }
  auto rows = ask_with_identity(session, core::k_writer_sql, deadline);
  if (!rows) {
    return tl::make_unexpected(rows.error());
  }
  return core::parse_writer_rows(*rows);
}

core::Report check_writer(const config::PostgresCluster& cluster, const config::Backend& backend,
                          const util::HostPort& node, const Deadline& deadline,
                          const std::shared_ptr<Peers>& peers) {
  const ShareSettings share = patroni_sharing(cluster);
  auto manager = spawn([bases = cluster.patroni, tls = patroni_http(cluster), node, deadline, peers,
                        share, who = mark_key(backend, node)] {
    return ask_patroni_for_writer(*peers, bases, tls, node, deadline,
                                  with_cadence(*peers, share, who));
  });

  core::Step nstep = sql_step("node", node, core::k_writer_sql);
  const auto t0 = peers->now();
  const auto session = peers->pg(pg_target(cluster, node));
  auto role = ask_writer_node(*session, deadline);
  nstep.latency_ms = elapsed_ms(t0, peers->now());
  nstep.answer = role ? core::describe(*role) : role.error().detail;

  core::Report report;
  report.own = core::own_words(role);
  report.node_answered = role.has_value();
  std::optional<core::Step> probe_step;
  std::optional<tl::expected<void, ProbeError>> written;
  if (cluster.write_probe && role && !role->in_recovery && !role->read_only) {
    // Only a node that says it is a read-write primary: the probe's question is whether it
    // can write, not which node it is. Meanwhile the managers answer.
    core::Report probe_report;
    written = probe_write(*session, util::to_string(node), deadline, *peers, probe_report);
    probe_step = std::move(probe_report.steps.front());
  }
  std::optional<WriterManagerResult> m = await_by(manager, deadline);
  if (m && m->members.shared &&
      !(role && m->members.view && core::shared_view_fits_writer(*m->members.view, node, *role))) {
    // A writable node, or one the view names leader, is judged on the members' live view and
    // its own GET /primary: a promotion the shared view predates, or an old primary a majority
    // has moved on from. Ask them (and share what they say).
    report.steps.push_back(m->members.steps.front());
    report.steps.back().answer +=
        "; set aside: the node is read-write or named leader, so the members are asked";
    m = ask_patroni_for_writer(*peers, cluster.patroni, patroni_http(cluster), node, deadline,
                               share.asked_live());
  }
  if (m) {
    for (auto& step : m->members.steps) {
      report.steps.push_back(std::move(step));
    }
  }
  report.steps.push_back(std::move(nstep));
  if (probe_step) {
    report.steps.push_back(std::move(*probe_step));
  }
  core::WriterObservation obs =
      m ? core::WriterObservation{node,
                                  std::move(m->members.view),
                                  std::move(role),
                                  std::move(m->leader_report),
                                  m->members.quorum,
                                  std::nullopt}
        : core::WriterObservation{node,
                                  tl::make_unexpected(not_finished(k_patroni_step)),
                                  std::move(role),
                                  std::nullopt,
                                  false,
                                  std::nullopt};
  obs.write_probe = std::move(written);
  if (m) {
    obs.outage = std::move(m->outage);
  }
  report.verdict = core::evaluate_writer(obs, backend.on_saturation);
  return report;
}

// ---------------------------------------------------------------- replica

core::Report check_replica(const config::PostgresCluster& cluster, const config::Backend& backend,
                           const util::HostPort& node, const Deadline& deadline,
                           const std::shared_ptr<Peers>& peers) {
  // The members get what the replica's own query leaves: a hung member (no majority yet)
  // must not starve the query and take every healthy replica out.
  const Deadline members_by = deadline.minus(reserve_for_last_step(deadline, peers->now()));
  const ShareSettings share = patroni_sharing(cluster);
  auto manager = spawn([bases = cluster.patroni, tls = patroni_http(cluster), node, members_by,
                        peers, share, who = mark_key(backend, node)] {
    return ask_patroni(*peers, bases, tls, node, members_by, false,
                       with_cadence(*peers, share, who));
  });
  // A standby cluster's source is asked meanwhile too: its members do not depend on the
  // standby's view, and its leader is sampled only if that view is a standby cluster's.
  StandbySource source(cluster, node, members_by, peers);
  core::Step nstep = sql_step("node", node, core::k_replica_sql);
  const auto t0 = peers->now();
  auto session = peers->pg(pg_target(cluster, node));
  const auto opened = session->open(deadline); // meanwhile Patroni
  // The node's own answer time is its connection and its answer to the replica query: the
  // wait for Patroni, the leader's sample and the catch-up's pauses are not the node's.
  const double open_ms = elapsed_ms(t0, peers->now());

  core::Report report;
  std::optional<ManagerResult> m = await_by(manager, deadline);
  // No member gave its view (the DCS cannot be read, or this host reaches no member): the
  // leader Patroni keeps without its DCS, if any, is sampled by its own GET /primary, where
  // Patroni's GET /replica keeps running replicas. Not for a node that did not answer: its
  // verdict is down already, and the requests would only load Patroni during the outage.
  std::optional<core::OutageAnswers> outage;
  SampleResult kept_sample;
  if (opened && m && !m->view && m->none_answered && !cluster.patroni.empty()) {
    const Deadline outage_by = deadline.minus(reserve_for_last_step(deadline, peers->now()));
    const auto sent = peers->now();
    outage = ask_patroni_outage(*peers, cluster.patroni, patroni_http(cluster), node, outage_by,
                                m->steps);
    kept_sample = sample_kept_leader(*outage, sent);
  }

  // Sample the leader first and read the replica after: the order makes the bound sound. The
  // sample gets an earlier deadline, so a hung leader cannot starve the replica's own query
  // (and take every healthy replica out of rotation with a reason that blames the replica).
  struct Pass {
    tl::expected<core::ClusterView, ProbeError> view;
    SampleResult sample;
    tl::expected<core::ReplicaRow, ProbeError> row;
    double query_ms = 0; // the replica query's round trip
  };
  const auto sample_then_read = [&](std::optional<ManagerResult>& result) {
    Pass p{result ? std::move(result->view)
                  : tl::expected<core::ClusterView, ProbeError>(
                        tl::make_unexpected(not_finished(k_patroni_step))),
           {},
           tl::make_unexpected(ProbeError{})};
    if (result) {
      for (auto& step : result->steps) {
        report.steps.push_back(std::move(step));
      }
    }
    if (p.view && opened) {
      const Deadline sample_by = deadline.minus(reserve_for_last_step(deadline, peers->now()));
      if (source.measures(*p.view)) {
        p.sample = source.sample(sample_by, report.steps);
      } else {
        p.sample = sample_leader(*peers, cluster, *p.view, node, sample_by);
        if (p.sample.step) {
          report.steps.push_back(*p.sample.step);
        }
      }
    } else if (outage) {
      p.sample = kept_sample;
    } else {
      p.sample.problem = p.view ? "the replica did not answer" : "no view from Patroni";
    }
    const auto asked_at = peers->now();
    auto rows =
        opened ? ask_with_identity(*session, core::k_replica_sql, deadline)
               : tl::expected<std::vector<PgRow>, ProbeError>(tl::make_unexpected(opened.error()));
    p.query_ms = elapsed_ms(asked_at, peers->now());
    p.row = rows ? core::parse_replica_rows(*rows)
                 : tl::expected<core::ReplicaRow, ProbeError>(tl::make_unexpected(rows.error()));
    return p;
  };
  Pass pass = sample_then_read(m);
  const bool own_unfit =
      m && m->shared && pass.view && pass.row &&
      !core::shared_view_fits_reader(*pass.view, node, pass.row->status,
                                     pass.sample.wal ? std::optional{pass.sample.wal->timeline}
                                                     : std::nullopt,
                                     pass.sample.timed_out);
  const bool source_unfit = pass.row && source.shared_unfit(pass.row->status, pass.sample);
  if (own_unfit) {
    // The shared view does not fit what the node and the leader say now (a leader that cannot
    // be sampled, another timeline, this node named leader while in recovery): ask the members.
    report.steps.push_back(core::Step{"manager", "shared view", "GET /cluster",
                                      "set aside: it does not fit the leader's sample or the "
                                      "node's recovery state; asking the members",
                                      0});
    m = ask_patroni(*peers, cluster.patroni, patroni_http(cluster), node, members_by, false,
                    share.asked_live());
  }
  if (source_unfit) {
    source.ask_live(members_by, report.steps);
    if (!own_unfit && m) {
      // The standby's own view still stands: the next pass takes it again, its steps told.
      m->view = std::move(pass.view);
      m->steps.clear();
    }
  }
  if (own_unfit || source_unfit) {
    pass = sample_then_read(m);
  }
  auto& view = pass.view;
  SampleResult& sample = pass.sample;
  auto& row = pass.row;

  core::LagEvidence evidence;
  source.name_in(evidence, sample);
  if (outage) {
    evidence.caught_up_phrase = "replayed past the kept leader's WAL position (its GET /primary)";
    evidence.behind_phrase = "replay still behind the kept leader's WAL position";
  }
  evidence.primary_sampled = sample.wal.has_value();
  evidence.primary_problem = sample.problem;
  auto status = row ? tl::expected<core::ReplicaStatus, ProbeError>(row->status)
                    : tl::make_unexpected(row.error());
  if (row) {
    const core::ReplicaStatus& st = row->status;
    core::ReplayPosition position = row->position;
    auto read_at = peers->now();
    // LSNs compare only within one timeline.
    const bool comparable = sample.wal && st.received_timeline == sample.wal->timeline;
    // Waiting cannot help when replay is paused or nothing was replayed yet.
    const int again = poll_catch_up(
        *peers, catch_up_until(deadline, sample.sent, backend.max_lag),
        [&] {
          return comparable && st.in_recovery && !st.replay_paused && position.replay &&
                 *position.replay < sample.wal->lsn;
        },
        [&] {
          auto more = session->query(core::k_replay_sql, deadline);
          auto next = more ? core::parse_replay_rows(*more)
                           : tl::expected<core::ReplayPosition, ProbeError>(
                                 tl::make_unexpected(more.error()));
          if (next) {
            position = std::move(*next);
            read_at = peers->now();
          }
          return next.has_value();
        });
    evidence.since_last_replay_s = position.since_last_replay_s;
    if (comparable && position.replay) {
      record_catch_up(evidence, sample.sent, read_at, *position.replay >= sample.wal->lsn);
    }
    nstep.answer = core::describe(st, position, 1 + again);
  }
  nstep.latency_ms = open_ms + pass.query_ms;
  if (!status) {
    nstep.answer = status.error().detail;
  }
  report.steps.push_back(std::move(nstep));
  report.own = core::own_words(status);
  report.node_answered = status.has_value();
  core::ReplicaObservation obs{node,
                               std::move(view),
                               std::move(status),
                               {},
                               sample.wal ? std::optional{sample.wal->timeline} : std::nullopt,
                               sample.wal ? sample.wal->system_id : std::nullopt,
                               sample.leader};
  obs.outage = std::move(outage);
  obs.lag = core::estimate_lag(evidence);
  report.lag = obs.lag;
  report.verdict = core::evaluate_replica(
      obs, std::chrono::duration<double>(backend.max_lag).count(), backend.readers);
  return report;
}

} // namespace

core::Report check_postgres(const config::PostgresCluster& cluster, const config::Backend& backend,
                            const util::HostPort& node, const Deadline& deadline,
                            const std::shared_ptr<Peers>& peers, Vantage vantage) {
  const bool writer = backend.role == config::Role::primary;
  core::Report report = writer ? check_writer(cluster, backend, node, deadline, peers)
                               : check_replica(cluster, backend, node, deadline, peers);
  if (vantage == Vantage::on_node) {
    // The one place the disk rule applies, after either role's verdict: the agent's checks.
    judge_disks(cluster, writer, deadline, *peers, report);
  }
  report.auth = auth_words(cluster);
  return report;
}

tl::expected<core::ClusterView, core::ProbeError>
patroni_view(const config::PostgresCluster& cluster, const Deadline& deadline) {
  return patroni_view(*network_peers(nullptr), cluster, deadline);
}

tl::expected<core::ClusterView, core::ProbeError>
patroni_view(Peers& peers, const config::PostgresCluster& cluster, const Deadline& deadline) {
  return ask_patroni(peers, cluster.patroni, patroni_http(cluster), std::nullopt, deadline).view;
}

} // namespace dbcheck::probe
