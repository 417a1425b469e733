#include "run_check.hpp"

#include "async.hpp"
#include "deadline.hpp"
#include "pg_check.hpp"
#include "redis_check.hpp"

#include <fmt/format.h>

#include <type_traits>

namespace dbcheck::probe {

core::Report run_check(const config::Cluster& cluster, const config::Backend& backend,
                       const util::HostPort& node) {
  const auto started = Clock::now();
  const Deadline deadline{started + backend.timeout};
  auto work = spawn([cluster, backend, node, deadline] {
    return std::visit(
        [&](const auto& c) {
          if constexpr (std::is_same_v<std::decay_t<decltype(c)>, config::PostgresCluster>) {
            return check_postgres(c, backend, node, deadline);
          } else {
            return check_redis(c, backend, node, deadline);
          }
        },
        cluster);
  });
  core::Report report;
  if (work.wait_until(deadline.at() + 2 * k_grace) == std::future_status::ready) {
    report = work.get();
  } else {
    report.verdict = {core::State::down, core::Failure::timeout,
                      fmt::format("timeout: the check did not finish within {}",
                                  util::format_duration(backend.timeout))};
  }
  report.backend = backend.name;
  report.node = util::to_string(node);
  report.role = std::string{config::to_string(backend.role)};
  report.elapsed_ms = elapsed_ms(started, Clock::now());
  report.deadline_ms = static_cast<double>(backend.timeout.count());
  return report;
}

} // namespace dbcheck::probe
