#pragma once
// What one member's Patroni says about itself: the body of GET /patroni and of its health
// endpoints (GET /primary answers the same document, with 200 only while that Patroni holds
// the leader lock by its own clock).

#include "lsn.hpp"

#include <tl/expected.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dbcheck::core {

// GET /patroni (or /primary) on one member.
struct PatroniStatus {
  std::string state;                      // running, starting, stopped, unknown, ...
  std::string role;                       // master (3.x) / primary (4.x), replica, standby_leader
  std::optional<long long> dcs_last_seen; // epoch seconds of its last successful DCS read
  std::optional<std::string> name;        // its member name (Patroni 4 reports it; 3.x does not)
  // database_system_identifier: its PostgreSQL's (pg_controldata), absent while it has none
  // (bootstrapping, an empty data directory).
  std::optional<std::uint64_t> system_id;
  // failsafe_mode_is_active: on the leader, every member in the DCS's failsafe topology accepted
  // it within ttl while the DCS could not be read; on a replica, the leader asked it within ttl.
  bool failsafe_active = false;
  // xlog.location and timeline on a primary: its PostgreSQL's current WAL position and
  // timeline, read by Patroni's own query while serving the request; nullopt on a replica.
  std::optional<Lsn> wal_location{};
  std::optional<std::uint32_t> timeline{};
  bool noloadbalance = false; // tags.noloadbalance: Patroni's GET /replica keeps it out
};

// What one member's Patroni answered to GET /primary: 200 only while it holds the leader lock
// by its own clock (renewed within ttl, or kept under failsafe mode; Patroni's own check), with
// its status document.
struct LeaderReport {
  std::string url;      // where it was asked, without credentials
  long http_status = 0; // 200 or 503
  PatroniStatus status; // the body: state, role, name (4.x)
};

// --- Interface ---

// Parses the body of GET /patroni or /primary; an error names what is missing or malformed
// (a database_system_identifier that is not a decimal string is malformed).
tl::expected<PatroniStatus, std::string> parse_patroni_status(std::string_view body);

} // namespace dbcheck::core
