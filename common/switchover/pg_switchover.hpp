#pragma once
// A PostgreSQL switchover through Patroni: preflight (Patroni's view, the leader passing the
// writer check, a replica that can take over), POST /switchover, and confirmation that the new
// leader passes the writer check.

#include "driver.hpp"

#include <config/config.hpp>

namespace dbcheck::switchover {

// --- Interface ---

// Runs the phases for `c` (the same cluster as `cluster`), reporting through `d`.
SwitchoverResult pg_switchover(const config::PostgresCluster& c, const config::Cluster& cluster,
                               const SwitchoverOptions& options, Driver& d);

} // namespace dbcheck::switchover
