#pragma once
// A [cluster.NAME] section: its `engine` chooses the key table and the rules the keys must
// meet together. Each engine is one row of a table whose length the build checks against the
// Cluster variant (cluster_section.cpp), so an engine added to config.hpp cannot be forgotten here.

#include "config.hpp"
#include "toml_reader.hpp"

#include <string>

namespace dbcheck::config {

// Reads the table `t` of [cluster.`name`] (its header at `where`) into cfg.clusters, reporting
// every problem in `e`.
void parse_cluster(const std::string& name, const toml::table& t, const toml::source_region& where,
                   Config& cfg, Errors& e);

} // namespace dbcheck::config
