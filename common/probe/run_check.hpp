#pragma once
// The one entry point binaries call: check a node for a backend, whatever the engine.

#include "connection_cache.hpp"
#include "deadline.hpp"
#include "peers.hpp"

#include <config/config.hpp>
#include <core/report.hpp>
#include <util/host_port.hpp>

#include <memory>

namespace dbcheck::probe {

// --- Interface ---

// Checks `node` for `backend` of `cluster`. Returns by `started` + backend.timeout less a
// small reserve for the caller to report and exit, whatever the peers do: a step still blocked
// then (a DNS lookup no library can bound, say) is abandoned and the check reported as a
// timeout. `started` is when the caller began (before loading its config). `cache`, when
// given, keeps connections open between calls; it must outlive any call that timed out (its
// abandoned step may still return a connection to it). `vantage` on_node: the caller runs on
// the node (the agent), so the checks may read its filesystems too. Never throws.
core::Report run_check(const config::Cluster& cluster, const config::Backend& backend,
                       const util::HostPort& node, Clock::time_point started,
                       std::shared_ptr<ConnectionCache> cache = nullptr,
                       Vantage vantage = Vantage::remote);

// run_check() with every peer and the clock reached through `peers` (`started` on its clock):
// the switchover's confirming checks, and unit tests through fakes.
core::Report run_check_with(const std::shared_ptr<Peers>& peers, const config::Cluster& cluster,
                            const config::Backend& backend, const util::HostPort& node,
                            Clock::time_point started, Vantage vantage = Vantage::remote);

} // namespace dbcheck::probe
