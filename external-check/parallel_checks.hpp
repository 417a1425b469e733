#pragma once
// Many checks at once, for the commands that judge a whole cluster (status, haproxy-state):
// one thread each, so the slowest peer costs one timeout, not one per node.

#include <config/config.hpp>
#include <core/report.hpp>
#include <probe/deadline.hpp>
#include <util/host_port.hpp>

#include <vector>

namespace dbcheck::extcheck {

// One check to run: `node` of `cluster` for `backend` (both outlive the run).
struct CheckJob {
  const config::Cluster* cluster;
  const config::Backend* backend;
  util::HostPort node;
};

// --- Interface ---

// Runs every job at once, each bounded by its backend's timeout from `started`; the reports
// in the jobs' order.
std::vector<core::Report> run_checks(const std::vector<CheckJob>& jobs,
                                     probe::Clock::time_point started);

} // namespace dbcheck::extcheck
