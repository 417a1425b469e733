#include "switchover.hpp"

#include "driver.hpp"
#include "pg_switchover.hpp"
#include "redis_switchover.hpp"

#include <util/format.hpp>

namespace dbcheck::switchover {

std::string_view to_string(SwitchoverPhase phase) {
  switch (phase) {
  case SwitchoverPhase::preflight:
    return "preflight";
  case SwitchoverPhase::pause:
    return "pause";
  case SwitchoverPhase::request:
    return "request";
  case SwitchoverPhase::confirm:
    return "confirm";
  case SwitchoverPhase::demote:
    return "demote";
  case SwitchoverPhase::unpause:
    return "unpause";
  }
  return "?";
}

util::Duration minimum_pause(util::Duration timeout) {
  return timeout + std::chrono::duration_cast<util::Duration>(k_pause_margin);
}

std::optional<std::string> pause_refused(util::Duration pause, util::Duration timeout) {
  const util::Duration least = minimum_pause(timeout);
  if (pause >= least) {
    return std::nullopt;
  }
  return util::format("--pause {} is shorter than --timeout {} plus the {} margin for releasing "
                      "the old master: the pause must outlive the switchover (give --pause {} or "
                      "more, or leave it out)",
                      util::format_duration(pause), util::format_duration(timeout),
                      util::format_duration(least - timeout), util::format_duration(least));
}

SwitchoverResult run_switchover(const config::Cluster& cluster, const SwitchoverOptions& options,
                                const SwitchoverProgress& progress) {
  return run_switchover(cluster, options, progress, probe::network_peers(nullptr));
}

SwitchoverResult run_switchover(const config::Cluster& cluster, const SwitchoverOptions& options,
                                const SwitchoverProgress& progress,
                                std::shared_ptr<probe::Peers> peers) {
  Driver d(options, progress, std::move(peers));
  try {
    return std::visit(config::Overloaded{
                          [&](const config::PostgresCluster& pg) {
                            return pg_switchover(pg, cluster, options, d);
                          },
                          [&](const config::RedisCluster& redis) {
                            return redis_switchover(redis, cluster, options, d);
                          },
                      },
                      cluster);
  } catch (const std::exception& e) {
    return d.fail(std::string{"internal error: "} + e.what());
  }
}

} // namespace dbcheck::switchover
