#pragma once
// Free space on the node: statvfs of the data directory's filesystem and pg_wal's, asked
// through the Peers seam and judged by the core (core/disk_space.hpp). Only a check running on
// the node (the agent) asks.

#include "deadline.hpp"
#include "peers.hpp"

#include <config/config.hpp>
#include <core/report.hpp>

namespace dbcheck::probe {

// --- Interface ---

// Measures the filesystems of `cluster`'s data_directory and of its pg_wal (a link followed
// to where the WAL lives) through `peers`, one step each in `report`, and judges them into
// report.verdict for a writer (`writer`) or a reader (core::apply_disk_space). Without a
// data_directory, one step says free space is not measured. Past `deadline` nothing is asked
// and the step says so: statvfs cannot be bounded, so the caller's wait bounds it.
void judge_disks(const config::PostgresCluster& cluster, bool writer, const Deadline& deadline,
                 Peers& peers, core::Report& report);

} // namespace dbcheck::probe
