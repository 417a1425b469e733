#pragma once
// Every metric the agent exports on /metrics, declared once: name, type and help. The renderer
// (status_render.cpp) writes these and only these, by their typed key; docs/agent.md lists
// them and tests/unit/test_agent_metrics_list.cpp checks the two agree.

#include <array>
#include <cstddef>
#include <string_view>

namespace dbcheck::agent {

enum class MetricType { gauge, counter, histogram };

// One exported metric.
struct MetricSpec {
  std::string_view name;
  MetricType type;
  std::string_view help;
};

// The typed key of each metric: its index in k_metrics.
enum class Metric : std::size_t {
  backend_up,
  verdict_age,
  transitions,
  check_failures,
  check_duration,
  replica_lag,
  probe_connects,
  probe_closes,
  sentinel_subscriptions,
  agent_draining,
  agent_connections_open,
  agent_connections_refused,
  agent_connections_dropped,
  http_connections_dropped,
  agent_reloads,
  manager_votes,
};

// In the order of Metric.
inline constexpr std::array<MetricSpec, 16> k_metrics{{
    {"dbcheck_backend_up", MetricType::gauge,
     "1 when the agent reports the backend's local node up (damped, fresh), else 0"},
    {"dbcheck_verdict_age_seconds", MetricType::gauge,
     "Seconds since the backend's last probe round"},
    {"dbcheck_transitions_total", MetricType::counter,
     "Changes of the reported state, by new state and failure class"},
    {"dbcheck_check_failures_total", MetricType::counter, "Failing probe rounds, by failure class"},
    {"dbcheck_check_duration_seconds", MetricType::histogram,
     "Duration of one probe round's check"},
    {"dbcheck_replica_lag_seconds", MetricType::gauge,
     "Upper bound on the replica's staleness from the last round (absent when unknown)"},
    {"dbcheck_probe_connects_total", MetricType::counter,
     "Database connections the prober opened (the first ones and every reconnect)"},
    {"dbcheck_probe_connection_closes_total", MetricType::counter,
     "Kept database connections the prober closed, by reason (max_age: renewed; idle: unused "
     "30 s; broken: failed in use; surplus: one idle per peer is enough)"},
    {"dbcheck_sentinel_subscriptions_total", MetricType::counter,
     "Sentinel event subscriptions established (the first ones and every resubscription)"},
    {"dbcheck_agent_draining", MetricType::gauge, "1 while every backend answers drain"},
    {"dbcheck_agent_connections_open", MetricType::gauge, "Open agent-check connections"},
    {"dbcheck_agent_connections_refused_total", MetricType::counter,
     "Agent-check connections closed unanswered at the connection limit"},
    {"dbcheck_agent_connections_dropped_total", MetricType::counter,
     "Agent-check connections ended without a delivered answer, by reason (limit: refused at "
     "max_connections; write_timeout: the poller did not read its answer within 1 s; "
     "accept_error: accept() failed, e.g. out of file descriptors; not_allowed: the client is "
     "not in agent.allow; address_limit: 1024 already open from its address, or 64 waiting "
     "for their line while 1024 wait in all)"},
    {"dbcheck_agent_http_connections_dropped_total", MetricType::counter,
     "HTTP connections closed unanswered, by reason (not_allowed: the client is not in "
     "agent.allow; deadline: not answered 1 s after accept)"},
    {"dbcheck_agent_reloads_total", MetricType::counter,
     "Configuration reloads (SIGHUP), by result"},
    {"dbcheck_manager_votes", MetricType::gauge,
     "Redis writer backends: the configured Sentinels in the last round by vote (this: name "
     "this node master; other: answered without naming it: another master, o_down, "
     "mid-failover; none: no usable answer)"},
}};

// --- Interface ---

// The declaration of `m`.
constexpr const MetricSpec& spec(Metric m) {
  return k_metrics[static_cast<std::size_t>(m)];
}

// "gauge", "counter", "histogram".
constexpr std::string_view to_string(MetricType t) {
  return t == MetricType::gauge ? "gauge" : t == MetricType::counter ? "counter" : "histogram";
}

} // namespace dbcheck::agent
