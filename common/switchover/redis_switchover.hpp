#pragma once
// A Redis/Valkey switchover through Sentinel: preflight, CLIENT PAUSE WRITE on the old master,
// SENTINEL FAILOVER, confirmation by a Sentinel majority and the writer check, REPLICAOF on
// the old master, CLIENT UNPAUSE; and the release of the old master when it cannot go on.

#include "driver.hpp"

#include <config/config.hpp>

namespace dbcheck::switchover {

// --- Interface ---

// Runs the phases for `c` (the same cluster as `cluster`), reporting through `d`.
SwitchoverResult redis_switchover(const config::RedisCluster& c, const config::Cluster& cluster,
                                  const SwitchoverOptions& options, Driver& d);

} // namespace dbcheck::switchover
