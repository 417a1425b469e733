#pragma once
// What Redis and Sentinel said, parsed from their replies (ROLE, PING, SENTINEL ...).

#include "probe_error.hpp"
#include "resp.hpp"

#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <optional>
#include <string>
#include <vector>

namespace dbcheck::core {

// ROLE on a data node.
struct RedisRole {
  bool master = false;
  long long offset = -1;      // master: master_repl_offset; replica: processed offset (-1: no link)
  util::HostPort master_addr; // replica only: whom it replicates from
  std::string link_state;     // replica only: connected, connect, connecting, sync, handshake, ...
};

// A writer check's write probe: LPUSHX on a key that does not exist, a write that changes
// nothing, replicates nothing, and is refused exactly when Redis refuses writes (MISCONF, OOM,
// NOREPLICAS); a PING refused with MISCONF says the same.
struct WriteProbe {
  enum class Outcome {
    not_asked, // write_probe = false, or not a writer check
    accepted,  // Redis ran it: writes are taken
    refused,   // Redis refused it for a reason that refuses every write
    unknown,   // refused for a reason of its own (NOPERM, a renamed command): proves nothing
  };
  Outcome outcome = Outcome::not_asked;
  std::string detail; // refused, unknown: Redis's error line
};

// The key the write probe names: it must never exist (an existing list would get an element).
inline constexpr const char* k_write_probe_key = "dbcheck:write-probe";

// One Sentinel's view of the monitored master.
struct SentinelView {
  std::optional<util::HostPort> master; // GET-MASTER-ADDR-BY-NAME; nullopt: unknown name (nil)
  std::string flags;                    // SENTINEL MASTER "flags", e.g. "master,o_down"
  std::optional<long long> config_epoch;
  std::string role_reported;                // the role the master last reported to this Sentinel
  std::optional<long long> info_refresh_ms; // how long ago this Sentinel last read its INFO
  // True when this Sentinel's answer cannot count as a vote for anyone (o_down, failover).
  bool unsettled() const;
  // True while this Sentinel is failing the master over (flag failover_in_progress).
  bool failing_over() const;
  // True when `flag` is one of the comma-separated flags (whole words: "s_down", ...).
  bool has(std::string_view flag) const;
};

// One replica as a Sentinel lists it (SENTINEL REPLICAS).
struct SentinelReplica {
  util::HostPort addr;
  std::string flags; // "slave", "slave,s_down", "slave,disconnected", ...
  std::string link;  // master-link-status: "ok" or "err"
};

// --- Interface ---

// Classifies an error reply (NOAUTH, WRONGPASS, NOPERM -> auth; LOADING, MASTERDOWN ->
// not_ready; "max number of clients" -> saturated; MISCONF, OOM, NOREPLICAS -> unwritable;
// anything else -> protocol), with the reply's code ("MISCONF") as the error's code.
ProbeError classify_redis_error(const std::string& message);

// Parses ROLE. Errors name what was malformed; a Sentinel's ROLE is an error too.
tl::expected<RedisRole, ProbeError> parse_role(const RespValue& reply);

// Checks PING: PONG passes; an error reply (LOADING, ...) is classified.
tl::expected<void, ProbeError> parse_ping(const RespValue& reply);

// Reads the reply to the write probe: an integer, or WRONGTYPE (the key exists: the write got
// past every gate), is accepted; an unwritable class of error is refused; any other error is
// unknown.
WriteProbe parse_write_probe(const RespValue& reply);

// Parses GET-MASTER-ADDR-BY-NAME: [host, port] -> the address, nil -> nullopt.
tl::expected<std::optional<util::HostPort>, ProbeError> parse_master_addr(const RespValue& reply);

// Reads "flags", "config-epoch", "role-reported" and "info-refresh" from SENTINEL MASTER's flat
// [field, value, ...] array.
tl::expected<SentinelView, ProbeError> parse_sentinel_master(const RespValue& reply);

// A short text for logs: "master offset 123", "replica of 10.0.0.1:6379 (connected) offset 120".
std::string describe(const RedisRole& role);

// ROLE in a few words, without the offsets that move every second (for `dbcheck status`):
// "master", "replica of 10.0.0.1:6379, link connected".
std::string summarize(const RedisRole& role);

// The replicas in SENTINEL REPLICAS' reply (an array of flat field/value arrays); entries
// without a usable ip and port are left out, anything else is ignored, never an error.
std::vector<SentinelReplica> parse_sentinel_replicas(const RespValue& reply);

// True for a replica its Sentinel sees linked and up: one a switchover may promote.
bool replica_healthy(const SentinelReplica& r);

} // namespace dbcheck::core
