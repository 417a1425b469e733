#pragma once
// An HAProxy server-state file (the format of `show servers state`, version 1) that starts a
// freshly started HAProxy with each server UP or DOWN as dbcheck decided, instead of all UP.

#include <cstdint>
#include <string>
#include <vector>

namespace dbcheck::core {

// One server's starting state.
struct ServerStart {
  std::string backend;
  std::string server;
  std::uint16_t port = 0; // as in HAProxy's configuration (the file sets it; it must agree)
  bool up = false;
};

// --- Interface ---

// The file's text: "1", the field names, then one line per server. Each line sets only the
// operational state (RUNNING or STOPPED; HAProxy's checks take over from there): no address,
// no admin state, no check or agent settings, and a weight HAProxy applies only where the
// configuration's is already 256 (the same value), so nothing else of the configuration
// changes. Lines are matched by backend and server name: load it with
// `load-server-state-from-file global`.
std::string render_server_state(const std::vector<ServerStart>& servers);

} // namespace dbcheck::core
