#pragma once
// Reading and validating the TOML file, once, at the edge. toml++ stays inside the config room.

#include "config.hpp"
#include "password_file.hpp"

#include <tl/expected.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace dbcheck::config {

// Every problem found, each "FILE:LINE: KEY: what is wrong (what was expected)".
struct ConfigError {
  std::vector<std::string> messages;
};

// Where the configuration lives unless DBCHECK_CONFIG or --config says otherwise.
inline constexpr std::string_view k_default_config_path = "/etc/dbcheck/dbcheck.toml";

// --- Interface ---

// Reads, parses and validates the file at `path`, including each cluster's password file.
tl::expected<Config, ConfigError> load_config(const std::string& path);

// `loaded`, unless a password file of some cluster could not be read: then those messages as
// errors. For the agent (it serves every cluster of its host) and config-check (it judges the
// whole file); a check needs only its own cluster's (Config::unreadable).
tl::expected<Config, ConfigError> all_readable(tl::expected<Config, ConfigError> loaded);

// Same, from text already in memory; `path` only names the source in messages, and relative
// password_file paths are taken as they are.
tl::expected<Config, ConfigError> parse_config(std::string_view text, const std::string& path);

} // namespace dbcheck::config
