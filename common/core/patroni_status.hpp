#pragma once
// What one member's Patroni says about itself (GET /patroni) and about the cluster's timing
// (GET /config): how the leader confirms that it is a running primary still in touch with
// the DCS.

#include <tl/expected.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace dbcheck::core {

// GET /patroni on one member.
struct PatroniStatus {
  std::string state;                      // running, starting, stopped, unknown, ...
  std::string role;                       // master (3.x) / primary (4.x), replica, standby_leader
  std::optional<long long> dcs_last_seen; // epoch seconds of its last successful DCS read
  std::optional<std::string> name;        // its member name (Patroni 4 reports it; 3.x does not)
};

// Patroni's dynamic configuration: the times that bound how long a leader may go without
// reaching the DCS (seconds; Patroni's own defaults when a key is absent).
struct PatroniTiming {
  double ttl = 30;
  double loop_wait = 10;
  double retry_timeout = 10;
};

// --- Interface ---

// Parses the body of GET /patroni; an error names what is missing or malformed.
tl::expected<PatroniStatus, std::string> parse_patroni_status(std::string_view body);

// Parses the body of GET /config (the DCS's dynamic configuration).
tl::expected<PatroniTiming, std::string> parse_patroni_timing(std::string_view body);

// How stale a leader's last DCS contact may be before it counts as unmanaged: loop_wait (a
// healthy leader reads the DCS every loop_wait) + retry_timeout (after which Patroni itself
// demotes a leader that cannot reach it). Patroni requires ttl >= loop_wait + 2 x
// retry_timeout, so this leaves at least retry_timeout before its leader key can expire.
double max_dcs_silence_s(const PatroniTiming& timing);

} // namespace dbcheck::core
