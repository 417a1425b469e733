#pragma once
// What the HTTP port shows: /backend/<name> lines, /health JSON and /metrics text.

#include "verdict_cache.hpp"

#include <map>
#include <string>
#include <vector>

namespace dbcheck::agent {

// Agent-wide facts shown beside the backends.
struct AgentStatus {
  bool draining = false;
  bool expose_reasons = true; // false: states only, no reasons, members, addresses or LSNs
  std::string drain_reason;
  double uptime_s = 0;
  double stale_after_s = 3;
  std::size_t agent_connections_open = 0;
  std::uint64_t agent_connections_refused = 0;
  std::map<std::string, std::uint64_t> agent_connections_dropped; // by reason
  std::map<std::string, std::uint64_t> http_connections_dropped;  // by reason
  std::map<std::string, std::uint64_t> sentinel_subscriptions;    // by cluster
  std::uint64_t reloads = 0;
  std::uint64_t reload_failures = 0;
};

// --- Interface ---

// Seconds since `s` was last refreshed at `now` (infinite before the first round).
double age_seconds(const BackendSnapshot& s, probe::Clock::time_point now);

// True when `s` may be trusted at `now`: probed at least once, and not older than stale_after.
bool fresh(const BackendSnapshot& s, const AgentStatus& agent, probe::Clock::time_point now);

// "pg_write 10.0.0.1:5432 UP: reason" (or STALE), the body of GET /backend/<name>; "pg_write UP"
// when reasons are not exposed.
std::string render_backend_line(const BackendSnapshot& s, const AgentStatus& agent,
                                probe::Clock::time_point now);

// /health: every backend's verdicts, opinions, counters and ages, and the agent's state; only
// each backend's state and age, and whether the agent drains, when reasons are not exposed.
std::string render_health(const std::vector<BackendSnapshot>& all, const AgentStatus& agent,
                          probe::Clock::time_point now);

// /metrics in Prometheus text format 0.0.4.
std::string render_metrics(const std::vector<BackendSnapshot>& all, const AgentStatus& agent,
                           probe::Clock::time_point now);

} // namespace dbcheck::agent
