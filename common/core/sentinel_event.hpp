#pragma once
// Sentinel's pub/sub event messages, read for what they say about one master: which master
// (by name and its address before the event) and whether a failover of it has begun.
//
// Payloads (redis src/sentinel.c, sentinelEvent): for a master instance
// "master <name> <ip> <port>", for a replica or Sentinel instance
// "<type> <name> <ip> <port> @ <master-name> <master-ip> <master-port>"; +switch-master is
// "<master-name> <old-ip> <old-port> <new-ip> <new-port>". Read exactly: a payload with more
// or fewer words is not one of these (Valkey's "primary"/"replica" words are accepted).

#include <util/host_port.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace dbcheck::core {

// One event about a master.
struct SentinelEvent {
  std::string channel;     // "+try-failover", ...
  std::string master_name; // the monitored master's name
  util::HostPort master;   // the master's address the event refers to (the old one)
  bool failover = false;   // a failover of this master has begun (or just switched it)
};

// --- Interface ---

// Reads one event; nullopt when the payload does not name a master in a form above.
std::optional<SentinelEvent> parse_sentinel_event(std::string_view channel,
                                                  std::string_view payload);

// True for the channels that mean "a failover of this master has begun": +try-failover,
// +elected-leader, +failover-state-*, +selected-slave, +promoted-slave, +switch-master.
bool is_failover_channel(std::string_view channel);

} // namespace dbcheck::core
