#pragma once
// What dbcheck asks a PostgreSQL node, and the rows it expects back, parsed: the mirror of
// redis_replies.hpp. Pure: any shape or value other than the expected one is a protocol error
// naming what was unexpected, never a guess.

#include "lsn.hpp"
#include "pg_identity.hpp"
#include "pg_verdict.hpp"
#include "probe_error.hpp"

#include <tl/expected.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dbcheck::core {

using PgRow = std::vector<std::optional<std::string>>; // text values, nullopt for NULL

// The node's system identifier, the last column of the writer, sample and replica questions:
// which cluster's data this is (core/pg_identity.hpp), at no extra round trip. PUBLIC may call
// pg_control_system() by default (PostgreSQL 15 and 17); where it was revoked the question is
// asked again without this column (without_identity()), and the identity is not checked.
inline constexpr std::string_view k_identity_column =
    ", (SELECT system_identifier FROM pg_catalog.pg_control_system())";

// The writer's question. The connection count matters to the agent, whose kept connection
// still works when the server is full. PostgreSQL refuses a non-superuser once all client
// backends (superusers' included) fill max_connections less the reserved slots: count them all.
inline constexpr const char* k_writer_sql =
    "SELECT pg_is_in_recovery(), current_setting('transaction_read_only'), "
    "(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'), "
    "current_setting('max_connections')::int - "
    "current_setting('superuser_reserved_connections')::int, "
    "(SELECT system_identifier FROM pg_catalog.pg_control_system())";
// The leader's flushed WAL position and timeline (the first 8 hex digits of the current WAL
// file). Flushed, not written: a (synchronous) commit is visible only once flushed, and a
// walsender sends only flushed WAL, so written WAL still waiting for its fsync is nothing a
// replica could have, however current it is.
inline constexpr const char* k_sample_sql =
    "SELECT pg_current_wal_flush_lsn(), substr(pg_walfile_name(pg_current_wal_flush_lsn()), 1, 8), "
    "(SELECT system_identifier FROM pg_catalog.pg_control_system())";
// The reader's question: its state, its stream, and its replay position and age.
inline constexpr const char* k_replica_sql =
    "SELECT pg_is_in_recovery(), EXISTS (SELECT 1 FROM pg_stat_wal_receiver), "
    "(SELECT status FROM pg_stat_wal_receiver), "
    "CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() ELSE false END, "
    "pg_last_wal_replay_lsn(), "
    "extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()), "
    "(SELECT received_tli FROM pg_stat_wal_receiver), "
    "(SELECT system_identifier FROM pg_catalog.pg_control_system())";
// The replay position again, while watching a replica catch up.
inline constexpr const char* k_replay_sql =
    "SELECT pg_last_wal_replay_lsn(), "
    "extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())";

// The leader's answer to k_sample_sql.
struct WalSample {
  Lsn lsn = 0;
  std::uint32_t timeline = 0;
  std::optional<SystemId> system_id; // nullopt: asked without_identity()
};

// A replica's replay position: nullopt where PostgreSQL answered NULL.
struct ReplayPosition {
  std::optional<Lsn> replay;                 // pg_last_wal_replay_lsn()
  std::optional<double> since_last_replay_s; // age of the last replayed commit
};

// The replica's answer to k_replica_sql.
struct ReplicaRow {
  ReplicaStatus status;
  ReplayPosition position;
};

// --- Interface ---

// `sql` (one of the questions above) without its last column, k_identity_column: the question
// for a check user that may not call pg_control_system().
std::string without_identity(std::string_view sql);

// Whether `error` is pg_control_system() failing, the one failure the question is asked again
// without_identity() for: refused to the check user (42501 naming it), or a pg_control read
// while the server rewrote it (its CRC error: the file is read on every call without a lock,
// and a standby rewrites it often while it replays).
bool identity_unreadable(const ProbeError& error);

// The answer to k_writer_sql, or to it without_identity() (system_id nullopt then); a NULL or
// garbled identifier is a protocol error naming pg_control_system().
tl::expected<NodeRole, ProbeError> parse_writer_rows(const std::vector<PgRow>& rows);

// The answer to k_sample_sql, or to it without_identity(); the error names no peer (the caller
// does).
tl::expected<WalSample, ProbeError> parse_sample_rows(const std::vector<PgRow>& rows);

// The answer to k_replica_sql, or to it without_identity(), as parse_writer_rows().
tl::expected<ReplicaRow, ProbeError> parse_replica_rows(const std::vector<PgRow>& rows);

// The answer to k_replay_sql.
tl::expected<ReplayPosition, ProbeError> parse_replay_rows(const std::vector<PgRow>& rows);

// "pg_is_in_recovery=f, transaction_read_only=off, connections 3 of 47": for the report.
std::string describe(const NodeRole& role);

// "in_recovery=t, wal_receiver=streaming, ...": for the report; `polls` > 1 says how often
// replay was read.
std::string describe(const ReplicaStatus& status, const ReplayPosition& position, int polls);

// The writer query's answer in a few words, for `dbcheck status`: "primary, read-write",
// "primary, read-only", "in recovery".
std::string summarize(const NodeRole& role);

// The reader query's answer in a few words, for `dbcheck status`: "replica, streaming,
// timeline 4", "replica, no WAL receiver", "not in recovery"; ", replay paused" when it is.
std::string summarize(const ReplicaStatus& status);

} // namespace dbcheck::core
