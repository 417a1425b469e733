#include "run_check.hpp"

#include "async.hpp"
#include "deadline.hpp"
#include "peers.hpp"
#include "pg_check.hpp"
#include "redis_check.hpp"

#include <core/latency_bound.hpp>
#include <util/format.hpp>

#include <algorithm>
#include <exception>

namespace dbcheck::probe {

core::Report run_check(const config::Cluster& cluster, const config::Backend& backend,
                       const util::HostPort& node, Clock::time_point started,
                       std::shared_ptr<ConnectionCache> cache, Vantage vantage) {
  return run_check_with(network_peers(std::move(cache)), cluster, backend, node, started, vantage);
}

core::Report run_check_with(const std::shared_ptr<Peers>& peers, const config::Cluster& cluster,
                            const config::Backend& backend, const util::HostPort& node,
                            Clock::time_point started, Vantage vantage) {
  // Leave the caller time to log and exit inside the configured timeout: the steps stop at
  // `deadline`, the wait for them at deadline + 2 x k_grace, which is still before the end.
  const auto timeout = std::chrono::duration_cast<Clock::duration>(backend.timeout);
  const auto reserve = std::min<Clock::duration>(3 * k_grace, timeout / 4);
  const Deadline deadline{started + timeout - reserve};
  core::Report report;
  try {
    // The worker holds the peers (and through them the cache): an abandoned step may give a
    // connection back late.
    auto work = spawn([cluster, backend, node, deadline, peers, vantage] {
      return std::visit(config::Overloaded{
                            [&](const config::PostgresCluster& c) {
                              return check_postgres(c, backend, node, deadline, peers, vantage);
                            },
                            [&](const config::RedisCluster& c) {
                              return check_redis(c, backend, node, deadline, peers);
                            },
                        },
                        cluster);
    });
    if (work.wait_until(deadline.at() + 2 * k_grace) == std::future_status::ready) {
      report = work.get();
    } else {
      report.verdict = {core::State::down, core::Failure::timeout,
                        util::format("timeout: the check did not finish within {}",
                                     util::format_duration(backend.timeout))};
    }
  } catch (const std::exception& e) {
    // No thread to be had (RLIMIT_NPROC, memory): fail closed, and say why.
    report = core::Report{};
    report.verdict = {core::State::down, core::Failure::internal,
                      util::format("internal error: {}", e.what())};
  }
  if (report.own.empty()) {
    // The check ended before the node's answer was summarised (timeout, no thread).
    report.own = core::no_answer(report.verdict.failure);
  }
  // The one place the latency bound applies, whatever the engine and whichever binary asks.
  report.verdict = core::bound_latency(
      report.verdict,
      {backend.role == config::Role::replica, core::node_answer_ms(report),
       backend.max_latency ? std::optional{static_cast<double>(backend.max_latency->count())}
                           : std::nullopt});
  report.backend = backend.name;
  report.node = util::to_string(node);
  report.role = std::string{config::to_string(backend.role)};
  report.elapsed_ms = elapsed_ms(started, peers->now());
  report.deadline_ms = static_cast<double>(backend.timeout.count());
  return report;
}

} // namespace dbcheck::probe
