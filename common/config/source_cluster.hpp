#pragma once
// source_cluster: a standby cluster names the [cluster.NAME] it replicates from, so that its
// readers' lag is measured against that cluster's leader (docs/lag.md). The name refers to the
// rest of the file, so it is checked and linked once every section is read.

#include "config.hpp"
#include "toml_reader.hpp"

namespace dbcheck::config {

// --- Interface ---

// Checks each PostgreSQL cluster's source_cluster: another PostgreSQL [cluster.NAME] of this
// file, itself naming no source (its leader would be a standby_leader, whose WAL position
// cannot be sampled). Each problem goes to `e` at the key's line.
void check_source_clusters(const Config& cfg, Errors& e);

// Gives each standby cluster its source's settings, and, when cfg.unreadable names the source,
// why it cannot be reached. Call on a file check_source_clusters() found no error in.
void link_source_clusters(Config& cfg);

} // namespace dbcheck::config
