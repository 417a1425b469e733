#pragma once
// The service manager's notification protocol (sd_notify(3)): one datagram per state change to
// the AF_UNIX socket named by $NOTIFY_SOCKET. Spoken here rather than through libsystemd, as
// the systemd project advises for daemons that need only this (sd_notify(3), NOTES): the
// protocol is the stable interface, and libsystemd would map six more libraries (gcrypt, lz4,
// lzma, zstd, libcap...) into every agent: about 1 MiB resident (docs/results.md).

#include <chrono>
#include <optional>
#include <string_view>

namespace dbcheck::agent {

// --- Interface ---

// Sends `state` ("READY=1", "WATCHDOG=1", ...) to $NOTIFY_SOCKET (a path, or "@name" for an
// abstract socket). Nothing when it is unset or unusable: the agent runs the same without a
// service manager. Returns whether the datagram was sent.
bool notify_service_manager(std::string_view state);

// The watchdog interval the service manager expects a "WATCHDOG=1" within ($WATCHDOG_USEC),
// when it watches this process ($WATCHDOG_PID unset or ours); nullopt otherwise.
std::optional<std::chrono::microseconds> watchdog_interval();

} // namespace dbcheck::agent
