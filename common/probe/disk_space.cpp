#include "disk_space.hpp"

#include <core/disk_space.hpp>
#include <util/format.hpp>

#include <vector>

namespace dbcheck::probe {

void judge_disks(const config::PostgresCluster& cluster, bool writer, const Deadline& deadline,
                 Peers& peers, core::Report& report) {
  if (!cluster.data_directory) {
    report.steps.push_back(core::Step{"disk", "this host", "statvfs",
                                      "free space not measured (no data_directory)", 0});
    return;
  }
  const std::string& data = *cluster.data_directory;
  std::vector<core::DiskObservation> disks;
  for (const auto& [what, path] : {std::pair<std::string, std::string>{"data directory", data},
                                   {"WAL directory", data + "/pg_wal"}}) {
    core::DiskObservation d{what, path, tl::make_unexpected(std::string{}), 0};
    const auto t0 = peers.now();
    if (t0 >= deadline.at()) {
      // Unmeasured is judged as unmeasurable: a writer fails closed.
      d.space = tl::make_unexpected(std::string{"the check's deadline passed before it was asked"});
      d.out_of_time = true;
    } else {
      d.space = peers.fs_space(path);
    }
    d.latency_ms = elapsed_ms(t0, peers.now());
    report.steps.push_back(core::Step{"disk", path, util::format("statvfs ({})", what),
                                      core::describe(d), d.latency_ms});
    disks.push_back(std::move(d));
  }
  report.verdict = core::apply_disk_space(std::move(report.verdict), writer, disks, cluster.disk);
}

} // namespace dbcheck::probe
