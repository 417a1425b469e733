#pragma once
// What dbcheck needs of an HAProxy configuration file: its backends' `server` lines (name,
// address, port, whether HAProxy checks them). Not a validator: HAProxy's own `-c` is that;
// lines this does not understand are skipped or reported, never guessed at.

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
};

// The servers of a configuration, in file order, what was skipped (file:line: why), and the
// global `server-state-file` ("" when none; a relative one joined to `server-state-base`).
struct HaproxyServers {
  std::vector<HaproxyServer> servers;
  std::vector<std::string> skipped;
  std::string state_file;
};

// Looks up an environment variable (for "${NAME}" inside double quotes, as HAProxy does).
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// --- Interface ---

// The servers of `text`, read as HAProxy tokenizes a line (quotes, backslash escapes, '#'
// comments, "${NAME}" expanded inside double quotes only). `file` names the text in messages.
// An error (an unterminated quote, an unset variable in a server line) names file:line.
tl::expected<HaproxyServers, std::string> parse_haproxy_cfg(std::string_view text,
                                                            const std::string& file,
                                                            const EnvLookup& env);

// parse_haproxy_cfg() on the file at `path` (at most 16 MiB), with the process environment.
tl::expected<HaproxyServers, std::string> load_haproxy_cfg(const std::string& path);

} // namespace dbcheck::config
