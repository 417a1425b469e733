#pragma once
// What dbcheck needs of an HAProxy configuration file: its backends' `server` lines (name,
// address, port, whether and how often HAProxy checks them) and the check settings of each
// backend (which external check, its timeouts). Not a validator: HAProxy's own `-c` is that;
// lines this does not understand are skipped or reported, never guessed at.

#include <util/duration.hpp>

#include <tl/expected.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dbcheck::config {

// One `server` line of a `backend` or `listen` section.
struct HaproxyServer {
  std::string backend;
  std::string name;
  std::string host;                  // "10.0.0.1", "::1", "db1.example" (no ipv4@/ipv6@)
  std::optional<std::uint16_t> port; // none when the line names none (HAProxy maps ports)
  bool checked = false;              // has `check`: HAProxy's health checks decide its state
  int line = 0;
  // `inter` from the server line, else its backend's or defaults' `default-server` line, else
  // HAProxy's 2s (inter_line 0).
  util::Duration inter{2000};
  int inter_line = 0;
  bool agent_check = false;              // `agent-check` (here or in a default-server line)
  std::optional<std::string> agent_send; // its `agent-send` text as written (escapes decoded)
};

// A `backend` or `listen` section's check settings, its own or from the `defaults` before it.
struct HaproxyBackend {
  std::string name;
  int line = 0;
  bool external_check = false; // `option external-check` in effect
  int external_check_line = 0;
  std::string command; // `external-check command`, "" when none
  int command_line = 0;
  std::optional<util::Duration> timeout_check;
  int timeout_check_line = 0;
  std::optional<util::Duration> timeout_connect;
  int timeout_connect_line = 0;
};

// The servers of a configuration, in file order, what was skipped (file:line: why), and the
// global `server-state-file` ("" when none; a relative one joined to `server-state-base`);
// the backend and listen sections, in file order.
struct HaproxyServers {
  std::vector<HaproxyServer> servers;
  std::vector<HaproxyBackend> backends;
  std::vector<std::string> skipped;
  std::string state_file;
};

// Looks up an environment variable (for "${NAME}" inside double quotes, as HAProxy does).
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// --- Interface ---

// The servers of `text`, read as HAProxy tokenizes a line (quotes, backslash escapes, '#'
// comments, "${NAME}" expanded inside double quotes only). `file` names the text in messages.
// An error (an unterminated quote, an unset variable in a server line) names file:line.
tl::expected<HaproxyServers, std::string>
parse_haproxy_cfg(std::string_view text, const std::string& file, const EnvLookup& env);

// HAProxy's time format: a number and an optional unit (us, ms, s, m, h, d; none: ms), or none
// when `text` is not one. Microseconds round up to a whole millisecond.
std::optional<util::Duration> parse_haproxy_time(std::string_view text);

// parse_haproxy_cfg() on the file at `path` (at most 16 MiB), with the process environment.
tl::expected<HaproxyServers, std::string> load_haproxy_cfg(const std::string& path);

} // namespace dbcheck::config
