#pragma once
// One PostgreSQL/Patroni check: both opinions asked in parallel under one deadline, the
// observations handed to the pure core (core/pg_verdict.hpp).

#include "deadline.hpp"
#include "peers.hpp"

#include <config/config.hpp>
#include <core/patroni_cluster.hpp>
#include <core/probe_error.hpp>
#include <core/report.hpp>
#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <memory>

namespace dbcheck::probe {

// --- Interface ---

// Checks `node` for `backend` of `cluster`; every step honours `deadline`. Fills the verdict,
// lag and steps of the report (run_check() fills the rest and bounds the whole). Everything
// beyond the check goes through `peers` (network_peers() in production). On the node
// (Vantage::on_node: the agent) the data and WAL filesystems are judged too (disk_space.hpp).
core::Report check_postgres(const config::PostgresCluster& cluster, const config::Backend& backend,
                            const util::HostPort& node, const Deadline& deadline,
                            const std::shared_ptr<Peers>& peers, Vantage vantage = Vantage::remote);

// Patroni's view of `cluster`: GET /cluster of every member in parallel, the view more than
// half of the answering members agree on (core/patroni_election.hpp), or why there is none by
// `deadline`.
tl::expected<core::ClusterView, core::ProbeError>
patroni_view(const config::PostgresCluster& cluster, const Deadline& deadline);

// patroni_view(), every member reached through `peers`.
tl::expected<core::ClusterView, core::ProbeError>
patroni_view(Peers& peers, const config::PostgresCluster& cluster, const Deadline& deadline);

} // namespace dbcheck::probe
