#pragma once
// The two-opinion decisions for PostgreSQL under Patroni: pure functions, every branch tabled in
// tests/unit/test_core_pg_verdict_*.cpp.

#include "patroni_cluster.hpp"
#include "patroni_outage.hpp"
#include "patroni_status.hpp"
#include "pg_identity.hpp"
#include "probe_error.hpp"
#include "replica_lag.hpp"
#include "verdict.hpp"
#include "writer_opinions.hpp"

#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace dbcheck::core {

// The node's own answer to the writer query.
struct NodeRole {
  bool in_recovery = true;
  bool read_only = true;               // current_setting('transaction_read_only') = 'on'
  std::optional<int> connections;      // client backends in use (pg_stat_activity)
  std::optional<int> connection_limit; // max_connections - superuser_reserved_connections
  std::optional<SystemId> system_id;   // nullopt: the check user may not read it
};

// Everything the writer check saw: the manager's answer and the node's, or why each failed.
struct WriterObservation {
  util::HostPort node;
  tl::expected<ClusterView, ProbeError> manager; // the view the members agree on
  tl::expected<NodeRole, ProbeError> node_answer;
  // The named leader's own report, asked only when the members name this node; nullopt when
  // it was not asked.
  std::optional<tl::expected<LeaderReport, ProbeError>> leader_report;
  // The members agreeing on `manager` are more than half of those configured (not only of
  // those that answered): only then may a round count towards a writer's rise since a move.
  bool quorum = false;
  // The write probe's outcome (write_probe = true): asked only of a node that answered as a
  // read-write primary; nullopt when it was not asked.
  std::optional<tl::expected<void, ProbeError>> write_probe{};
  // When no member gave its view (`manager` failed without one usable answer): every member's
  // GET /primary, asked to learn whether Patroni keeps a leader without its DCS.
  std::optional<OutageAnswers> outage{};
};

// The node's own answer to the reader query.
struct ReplicaStatus {
  bool in_recovery = false;
  bool receiver_present = false; // pg_stat_wal_receiver has a row
  std::optional<std::string>
      receiver_status; // "streaming", ...; nullopt if hidden (no dbcheck views)
  bool replay_paused = false;
  std::optional<std::uint32_t> received_timeline; // pg_stat_wal_receiver.received_tli
  std::optional<SystemId> system_id;              // nullopt: the check user may not read it
};

// Everything the reader check saw, with the lag bound already derived.
struct ReplicaObservation {
  util::HostPort node;
  tl::expected<ClusterView, ProbeError> manager;
  tl::expected<ReplicaStatus, ProbeError> node_answer;
  LagEstimate lag;
  std::optional<std::uint32_t> leader_timeline; // the leader's current timeline, when sampled
  std::optional<SystemId> leader_system_id;     // the leader's, when sampled with it
  std::string leader_name;                      // the leader sampled, for the identity reason
  // When no member gave its view (`manager` failed without one usable answer): every member's
  // GET /primary; the leader Patroni keeps without its DCS is then the one sampled.
  std::optional<OutageAnswers> outage{};
};

// --- Interface ---

// Writer: up only when the Patroni members agree `node` is the leader, its own Patroni confirms
// it (GET /primary 200: it holds the leader lock; a running primary) AND
// PostgreSQL there is out of recovery and read-write (and, when the write probe was asked,
// could extend a table: a full disk is unwritable); anything unknown is down. A full server
// (53300 on connect, or, over a kept connection, every slot in use) with Patroni's agreement
// follows `saturation` (core/writer_opinions.hpp).
Verdict evaluate_writer(const WriterObservation& obs, SaturationPolicy saturation);

// Reader: up when in recovery, streaming, not Patroni's leader, not tagged noloadbalance, a
// synchronous or quorum standby when `readers` asks for one, and the lag's upper bound is at
// most `max_lag_s`. Without the members' view, the same against the leader Patroni keeps
// without its DCS (core/patroni_outage.hpp). Anything unknown is down.
Verdict evaluate_replica(const ReplicaObservation& obs, double max_lag_s,
                         ReaderChoice readers = ReaderChoice::any);

} // namespace dbcheck::core
