#pragma once
// The sections about the host rather than a cluster: [agent] (dbcheck-agent's listening,
// probing and damping) and [log] (which of dbcheck's checks write a syslog line).

#include "config.hpp"
#include "toml_reader.hpp"

namespace dbcheck::config {

// Reads [agent] (its header at `where`) and its [agent.local] table into cfg.agent.
void parse_agent(const toml::node& node, const toml::source_region& where, Config& cfg, Errors& e);

// Reads [log] (its header at `where`) into cfg.log.
void parse_log(const toml::node& node, const toml::source_region& where, Config& cfg, Errors& e);

} // namespace dbcheck::config
