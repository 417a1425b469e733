#pragma once
// What HAProxy (or a person) asked dbcheck to do, worked out from argv and the environment.
// Pure: the environment is passed in as a map, so every rule is unit-tested.

#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dbcheck::extcheck {

using Env = std::map<std::string, std::string>;

// The backend and node one check is about.
struct Target {
  std::string backend;
  util::HostPort node;
};

// --- Interface ---

// HAProxy's external-check call: argv is <proxy_addr> <proxy_port> <server_addr> <server_port>
// and the backend comes from HAPROXY_PROXY_NAME (the command takes no arguments of its own).
// Returns an error text saying what is missing or malformed.
tl::expected<Target, std::string> haproxy_target(const std::vector<std::string>& args,
                                                 const Env& env);

// True when argv and the environment have the shape of HAProxy's call (4 arguments,
// HAPROXY_PROXY_NAME set): a refused target is then HAProxy's configuration, else a person's
// command line.
bool shaped_like_haproxy(const std::vector<std::string>& args, const Env& env);

// Manual use: BACKEND and HOST:PORT as typed.
tl::expected<Target, std::string> manual_target(const std::string& backend,
                                                const std::string& node);

// The configuration file: --config, else DBCHECK_CONFIG, else /etc/dbcheck/dbcheck.toml.
std::string config_path(const std::optional<std::string>& flag, const Env& env);

// The environment as a map, from a NULL-terminated `environ`-style array.
Env env_from(char** envp);

} // namespace dbcheck::extcheck
