#include "leader_sample.hpp"

#include <core/lsn.hpp>
#include <util/format.hpp>

namespace dbcheck::probe {

PgTarget pg_target(const config::PostgresCluster& c, const util::HostPort& address) {
  return PgTarget{address,   c.dbname,      c.user,    c.password.reveal(),
                  c.sslmode, c.sslrootcert, c.sslcert, c.sslkey};
}

core::Step sql_step(const std::string& opinion, const util::HostPort& address, const char* sql) {
  core::Step s;
  s.opinion = opinion;
  s.peer = util::to_string(address);
  s.asked = sql;
  return s;
}

tl::expected<std::vector<PgRow>, core::ProbeError>
ask_with_identity(PgPeer& session, const char* sql, const Deadline& deadline) {
  auto rows = session.query(sql, deadline);
  if (!rows && core::identity_unreadable(rows.error())) {
    return session.query(core::without_identity(sql), deadline);
  }
  return rows;
}

SampleResult sample_leader(Peers& peers, const config::PostgresCluster& cluster,
                           const core::ClusterView& view, const util::HostPort& node,
                           const Deadline& deadline, const std::string& opinion) {
  SampleResult s;
  const core::PatroniMember* leader = core::find_leader(view);
  if (leader == nullptr) {
    // A standby cluster's source primary is outside Patroni's view: without source_cluster
    // only the age of the last replayed commit bounds the lag there (docs/lag.md).
    const core::PatroniMember* standby = core::find_standby_leader(view);
    s.problem = standby != nullptr
                    ? util::format("a standby cluster: its standby_leader {} replicates from a "
                                   "primary outside it",
                                   standby->name)
                    : "Patroni names no leader";
    return s;
  }
  if (util::same_endpoint(leader->address, node)) {
    s.problem = "this node is the leader";
    return s;
  }
  if (!util::is_ip_literal(leader->address.host)) {
    // libpq would resolve the name itself, with no deadline of ours.
    s.problem = util::format("leader {}: {}", leader->name,
                             leader->unresolved.empty()
                                 ? util::format("its address {} is a host name, not sampled",
                                                util::to_string(leader->address))
                                 : leader->unresolved);
    return s;
  }
  core::Step step = sql_step(opinion, leader->address, core::k_sample_sql);
  s.leader = leader->name;
  const auto t0 = peers.now();
  auto session = peers.pg(pg_target(cluster, leader->address));
  if (auto opened = session->open(deadline); !opened) {
    s.problem = util::format("leader {}: {}", leader->name, opened.error().detail);
    s.timed_out = opened.error().kind == core::Failure::timeout;
  } else {
    s.sent = peers.now();
    auto rows = ask_with_identity(*session, core::k_sample_sql, deadline);
    auto wal =
        rows ? core::parse_sample_rows(*rows)
             : tl::expected<core::WalSample, core::ProbeError>(tl::make_unexpected(rows.error()));
    if (!wal) {
      s.problem = util::format("leader {}: {}", leader->name, wal.error().detail);
      s.timed_out = wal.error().kind == core::Failure::timeout;
    } else {
      s.wal = *wal;
      step.answer = util::format(
          "pg_current_wal_flush_lsn={}, timeline {}{}", core::format_lsn(wal->lsn), wal->timeline,
          wal->system_id ? util::format(", system_identifier={}", *wal->system_id) : std::string{});
    }
  }
  step.latency_ms = elapsed_ms(t0, peers.now());
  if (!s.wal) {
    step.answer = s.problem;
  }
  s.step = std::move(step);
  return s;
}

SampleResult sample_kept_leader(const core::OutageAnswers& outage, Clock::time_point sent) {
  SampleResult s;
  const core::OutageReplicaDecision d = core::outage_leader_for_replica(outage);
  if (!d.leader) {
    s.problem = d.why;
    return s;
  }
  const core::LeaderReport& r = *outage.answers[*d.leader].report;
  s.leader = r.status.name.value_or(r.url);
  if (!r.status.wal_location || !r.status.timeline) {
    s.problem = util::format("{}'s GET /primary gives no xlog.location and timeline", r.url);
    return s;
  }
  s.sent = sent;
  s.wal = core::WalSample{*r.status.wal_location, *r.status.timeline, r.status.system_id};
  return s;
}

} // namespace dbcheck::probe
