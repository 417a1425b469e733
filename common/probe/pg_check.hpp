#pragma once
// Runs one PostgreSQL/Patroni check: asks both opinions in parallel under one deadline, hands
// the observations to the pure core, and returns the verdict with everything it saw.

#include <config/config.hpp>
#include <core/report.hpp>
#include <util/host_port.hpp>

namespace dbcheck::probe {

// --- Interface ---

// Checks `node` for `backend` (of `cluster`). Returns within backend.timeout plus a few
// milliseconds whatever the peers do: a step still blocked then is abandoned and reported as a
// timeout. Never throws.
core::Report run_pg_check(const config::Cluster& cluster, const config::Backend& backend,
                          const util::HostPort& node);

} // namespace dbcheck::probe
