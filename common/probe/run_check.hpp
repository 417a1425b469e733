#pragma once
// The one entry point binaries call: check a node for a backend, whatever the engine.

#include <config/config.hpp>
#include <core/report.hpp>
#include <util/host_port.hpp>

namespace dbcheck::probe {

// --- Interface ---

// Checks `node` for `backend` of `cluster`. Returns within backend.timeout plus a few
// milliseconds whatever the peers do: a step still blocked then (a DNS lookup no library can
// bound, say) is abandoned and the check reported as a timeout. Never throws.
core::Report run_check(const config::Cluster& cluster, const config::Backend& backend,
                       const util::HostPort& node);

} // namespace dbcheck::probe
