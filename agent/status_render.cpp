#include "status_render.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <limits>

namespace dbcheck::agent {
namespace {

// A Prometheus label value: backslash, quote and newline escaped.
std::string label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

} // namespace

double age_seconds(const BackendSnapshot& s, probe::Clock::time_point now) {
  if (!s.started) {
    return std::numeric_limits<double>::infinity();
  }
  return std::chrono::duration<double>(now - s.updated).count();
}

bool fresh(const BackendSnapshot& s, const AgentStatus& agent, probe::Clock::time_point now) {
  return s.started && age_seconds(s, now) <= agent.stale_after_s;
}

std::string render_backend_line(const BackendSnapshot& s, const AgentStatus& agent,
                                probe::Clock::time_point now) {
  if (!fresh(s, agent, now)) {
    return fmt::format("{} {} DOWN: stale: no probe result for {:.1f}s\n", s.backend, s.node,
                       age_seconds(s, now));
  }
  return fmt::format("{} {} {}: {}\n", s.backend, s.node, core::to_label(s.reported.state),
                     s.reported.reason);
}

std::string render_health(const std::vector<BackendSnapshot>& all, const AgentStatus& agent,
                          probe::Clock::time_point now) {
  using nlohmann::json;
  json backends = json::object();
  for (const auto& s : all) {
    json steps = json::array();
    if (s.last_report) {
      for (const auto& st : s.last_report->steps) {
        steps.push_back({{"opinion", st.opinion},
                         {"peer", st.peer},
                         {"answer", st.answer},
                         {"latency_ms", st.latency_ms}});
      }
    }
    const double age = age_seconds(s, now);
    json lag = nullptr;
    if (s.last_report && s.last_report->lag) {
      lag = {{"seconds",
              s.last_report->lag->seconds ? json(*s.last_report->lag->seconds) : json(nullptr)},
             {"derivation", s.last_report->lag->derivation}};
    }
    backends[s.backend] = {
        {"cluster", s.cluster},
        {"node", s.node},
        {"role", config::to_string(s.role)},
        {"state", fresh(s, agent, now) ? core::to_string(s.reported.state) : "down"},
        {"stale", !fresh(s, agent, now)},
        {"reported",
         {{"state", core::to_string(s.reported.state)},
          {"failure", core::to_string(s.reported.failure)},
          {"reason", s.reported.reason},
          {"since_s", s.state_since_s}}},
        {"last_round",
         {{"state", core::to_string(s.raw.state)},
          {"failure", core::to_string(s.raw.failure)},
          {"reason", s.raw.reason},
          {"age_s", std::isfinite(age) ? json(age) : json(nullptr)},
          {"elapsed_ms", s.last_report ? s.last_report->elapsed_ms : 0.0},
          {"steps", steps}}},
        {"lag", lag},
        {"hysteresis", {{"successes", s.successes}, {"failures", s.failures}}},
        {"rounds", s.rounds}};
  }
  json doc = {{"backends", backends},
              {"agent",
               {{"draining", agent.draining},
                {"drain_reason", agent.drain_reason},
                {"uptime_s", agent.uptime_s},
                {"stale_after_s", agent.stale_after_s},
                {"agent_connections_open", agent.agent_connections_open},
                {"reloads", agent.reloads},
                {"reload_failures", agent.reload_failures}}}};
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string render_metrics(const std::vector<BackendSnapshot>& all, const AgentStatus& agent,
                           probe::Clock::time_point now) {
  std::string out;
  const auto head = [&out](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  head("dbcheck_backend_up", "gauge",
       "1 when the agent reports the backend's local node up (damped, fresh), else 0");
  for (const auto& s : all) {
    const bool up = fresh(s, agent, now) && s.reported.state == core::State::up;
    out += fmt::format("dbcheck_backend_up{{backend=\"{}\",role=\"{}\",node=\"{}\"}} {}\n",
                       label(s.backend), config::to_string(s.role), label(s.node), up ? 1 : 0);
  }
  head("dbcheck_verdict_age_seconds", "gauge", "Seconds since the backend's last probe round");
  for (const auto& s : all) {
    const double age = age_seconds(s, now);
    if (std::isfinite(age)) {
      out += fmt::format("dbcheck_verdict_age_seconds{{backend=\"{}\"}} {:.3f}\n", label(s.backend),
                         age);
    }
  }
  head("dbcheck_transitions_total", "counter",
       "Changes of the reported state, by new state and failure class");
  for (const auto& s : all) {
    for (const auto& [key, n] : s.transitions) {
      const auto bar = key.find('|');
      out +=
          fmt::format("dbcheck_transitions_total{{backend=\"{}\",to=\"{}\",failure=\"{}\"}} {}\n",
                      label(s.backend), key.substr(0, bar), key.substr(bar + 1), n);
    }
  }
  head("dbcheck_check_failures_total", "counter", "Failing probe rounds, by failure class");
  for (const auto& s : all) {
    for (const auto& [kind, n] : s.failures_by_kind) {
      out += fmt::format("dbcheck_check_failures_total{{backend=\"{}\",kind=\"{}\"}} {}\n",
                         label(s.backend), kind, n);
    }
  }
  head("dbcheck_check_duration_seconds", "histogram", "Duration of one probe round's check");
  for (const auto& s : all) {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < k_duration_buckets.size(); ++i) {
      cumulative += s.duration_buckets[i];
      out += fmt::format("dbcheck_check_duration_seconds_bucket{{backend=\"{}\",le=\"{}\"}} {}\n",
                         label(s.backend), k_duration_buckets[i], cumulative);
    }
    cumulative += s.duration_buckets.back();
    out += fmt::format("dbcheck_check_duration_seconds_bucket{{backend=\"{}\",le=\"+Inf\"}} {}\n",
                       label(s.backend), cumulative);
    out += fmt::format("dbcheck_check_duration_seconds_sum{{backend=\"{}\"}} {:.6f}\n",
                       label(s.backend), s.duration_sum_s);
    out += fmt::format("dbcheck_check_duration_seconds_count{{backend=\"{}\"}} {}\n",
                       label(s.backend), s.rounds);
  }
  head("dbcheck_replica_lag_seconds", "gauge",
       "Upper bound on the replica's staleness from the last round (absent when unknown)");
  for (const auto& s : all) {
    if (s.last_report && s.last_report->lag && s.last_report->lag->seconds) {
      out += fmt::format("dbcheck_replica_lag_seconds{{backend=\"{}\"}} {:.6f}\n", label(s.backend),
                         *s.last_report->lag->seconds);
    }
  }
  head("dbcheck_probe_connects_total", "counter",
       "Database connections the prober opened (the first ones and every reconnect)");
  for (const auto& s : all) {
    out += fmt::format("dbcheck_probe_connects_total{{backend=\"{}\"}} {}\n", label(s.backend),
                       s.probe_connects);
  }
  head("dbcheck_agent_draining", "gauge", "1 while every backend answers drain");
  out += fmt::format("dbcheck_agent_draining {}\n", agent.draining ? 1 : 0);
  head("dbcheck_agent_connections_open", "gauge", "Open agent-check connections");
  out += fmt::format("dbcheck_agent_connections_open {}\n", agent.agent_connections_open);
  head("dbcheck_agent_connections_refused_total", "counter",
       "Agent-check connections closed unanswered at the connection limit");
  out +=
      fmt::format("dbcheck_agent_connections_refused_total {}\n", agent.agent_connections_refused);
  head("dbcheck_agent_reloads_total", "counter", "Configuration reloads (SIGHUP), by result");
  out += fmt::format("dbcheck_agent_reloads_total{{result=\"ok\"}} {}\n", agent.reloads);
  out +=
      fmt::format("dbcheck_agent_reloads_total{{result=\"failed\"}} {}\n", agent.reload_failures);
  return out;
}

} // namespace dbcheck::agent
