#pragma once
// Whether a PostgreSQL node belongs to the cluster the manager means: its system identifier
// (pg_control_system(), fixed by initdb and kept by every replica made from it by a base
// backup) against the one Patroni or the leader reports. An address says where a node is, the
// identifier says which cluster's data it holds. Pure.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dbcheck::core {

// pg_controldata's "Database system identifier": an unsigned 64-bit number.
using SystemId = std::uint64_t;

// --- Interface ---

// A system identifier from its text: pg_controldata's unsigned decimal (Patroni's
// database_system_identifier), or SQL's signed bigint (pg_control_system() returns the same 64
// bits as int8, negative once the creation time's high bit is set). nullopt for anything else.
std::optional<SystemId> parse_system_id(std::string_view text);

// The identity failure's reason when both identifiers are known and differ: "identity:
// PostgreSQL's system identifier N is not the cluster's M that `whose` reports: ...";
// nullopt when they match or either is unknown (not checked, never a failure).
std::optional<std::string> identity_mismatch(std::optional<SystemId> node,
                                             std::optional<SystemId> cluster,
                                             std::string_view whose);

// Why the identity was not checked, for a passing verdict's reason ("identity not checked:
// ..."), `cluster_missing` saying why the cluster's is unknown; empty when both are known.
std::string identity_unchecked(std::optional<SystemId> node, std::optional<SystemId> cluster,
                               std::string_view cluster_missing);

} // namespace dbcheck::core
