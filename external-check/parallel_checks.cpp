#include "parallel_checks.hpp"

#include <probe/run_check.hpp>

#include <thread>

namespace dbcheck::extcheck {

std::vector<core::Report> run_checks(const std::vector<CheckJob>& jobs,
                                     probe::Clock::time_point started) {
  std::vector<core::Report> reports(jobs.size());
  std::vector<std::thread> threads;
  threads.reserve(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    threads.emplace_back([&job = jobs[i], &slot = reports[i], started] {
      slot = probe::run_check(*job.cluster, *job.backend, job.node, started);
    });
  }
  for (auto& t : threads) {
    t.join(); // each check returns by its backend's timeout, whatever its peers do
  }
  return reports;
}

} // namespace dbcheck::extcheck
