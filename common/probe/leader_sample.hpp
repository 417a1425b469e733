#pragma once
// The leader's WAL position, sampled before a replica is read (the order makes the lag bound
// sound: core/replica_lag.hpp), and the PostgreSQL steps the checks share to ask it.

#include "deadline.hpp"
#include "peers.hpp"

#include <config/config.hpp>
#include <core/patroni_cluster.hpp>
#include <core/patroni_outage.hpp>
#include <core/pg_rows.hpp>
#include <core/probe_error.hpp>
#include <core/report.hpp>
#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <optional>
#include <string>
#include <vector>

namespace dbcheck::probe {

// The leader's WAL position and timeline, and when they were asked for.
struct SampleResult {
  std::optional<core::WalSample> wal;
  Clock::time_point sent{};
  std::string leader;     // the leader's member name, when one was sampled
  std::string problem;    // why there is no sample, for the lag derivation
  bool timed_out = false; // the leader did not answer by the sample's deadline
  std::optional<core::Step> step;
};

// --- Interface ---

// What libpq is given to reach `address` with `cluster`'s database, user and TLS files.
PgTarget pg_target(const config::PostgresCluster& cluster, const util::HostPort& address);

// A step of `opinion` asking `sql` of `address`, its answer and latency still to fill in.
core::Step sql_step(const std::string& opinion, const util::HostPort& address, const char* sql);

// `sql` on `session`; asked again without_identity() when pg_control_system() fails (refused
// to the check user, or a torn read): the identity is then unchecked, never the node down.
tl::expected<std::vector<PgRow>, core::ProbeError>
ask_with_identity(PgPeer& session, const char* sql, const Deadline& deadline);

// Samples the leader `view` names with `cluster`'s connection settings by `deadline`, unless
// there is none or it is `node` itself; the step is named `opinion`.
SampleResult sample_leader(Peers& peers, const config::PostgresCluster& cluster,
                           const core::ClusterView& view, const util::HostPort& node,
                           const Deadline& deadline, const std::string& opinion = "primary_sample");

// The leader Patroni keeps without its DCS (core::outage_leader_for_replica()) as a sample:
// the WAL position and timeline its GET /primary reported (Patroni reads them from PostgreSQL
// while serving the request), asked at `sent`; a problem when none is kept or it gave none.
SampleResult sample_kept_leader(const core::OutageAnswers& outage, Clock::time_point sent);

} // namespace dbcheck::probe
