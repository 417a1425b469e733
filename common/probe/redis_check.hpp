#pragma once
// One Redis/Valkey + Sentinel check: every configured Sentinel and the node asked in parallel
// under one deadline, the observations handed to the pure core (core/redis_verdict.hpp).

#include "deadline.hpp"

#include <config/config.hpp>
#include <core/report.hpp>
#include <util/host_port.hpp>

namespace dbcheck::probe {

// --- Interface ---

// Checks `node` for `backend` of `cluster`; every step honours `deadline`. Fills the verdict,
// lag and steps of the report (run_check() fills the rest and bounds the whole).
core::Report check_redis(const config::RedisCluster& cluster, const config::Backend& backend,
                         const util::HostPort& node, const Deadline& deadline);

} // namespace dbcheck::probe
