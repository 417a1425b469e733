#include "status_render.hpp"

#include "metrics_list.hpp"

#include <util/format.hpp>

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

// The change under way: {"kind": "failing", "rounds": 1, "of": 2}, {"kind": "lagging",
// "lasted_s": 2.0, "window_s": 5.0}, or {"kind": "none"}.
nlohmann::json pending_json(const core::PendingChange& p) {
  nlohmann::json j = {{"kind", core::to_string(p.kind)}};
  if (p.kind == core::PendingChange::Kind::lagging) {
    j["lasted_s"] = static_cast<double>(p.lasted.count()) / 1000.0;
    j["window_s"] = static_cast<double>(p.window.count()) / 1000.0;
  } else if (p.kind != core::PendingChange::Kind::none) {
    j["rounds"] = p.rounds;
    j["of"] = p.needed;
  }
  return j;
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
  if (!agent.expose_reasons) {
    const bool up = fresh(s, agent, now) && s.reported.state == core::State::up;
    return util::format("{} {}\n", s.backend, up ? "UP" : "DOWN");
  }
  if (!fresh(s, agent, now)) {
    return util::format("{} {} DOWN: stale: no probe result for {:.1f}s\n", s.backend, s.node,
                        age_seconds(s, now));
  }
  return util::format("{} {} {}: {}\n", s.backend, s.node, core::to_label(s.reported.state),
                      s.reported.reason);
}

std::string render_health(const std::vector<BackendSnapshot>& all, const AgentStatus& agent,
                          probe::Clock::time_point now) {
  using nlohmann::json;
  json backends = json::object();
  if (!agent.expose_reasons) {
    // What HAProxy already learns from the agent port, and no more: no member, address, query,
    // LSN or connection count for whoever reaches the port.
    for (const auto& s : all) {
      const double age = age_seconds(s, now);
      backends[s.backend] = {
          {"state", fresh(s, agent, now) ? core::to_string(s.reported.state) : "down"},
          {"last_round", {{"age_s", std::isfinite(age) ? json(age) : json(nullptr)}}}};
    }
    json doc = {{"backends", backends},
                {"agent", {{"draining", agent.draining}, {"reloads", agent.reloads}}}};
    return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }
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
        {"hysteresis",
         {{"successes", s.successes},
          {"failures", s.failures},
          {"pending", pending_json(s.pending)}}},
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
  // Every metric is written through its declaration (metrics_list.hpp): HELP and TYPE once,
  // then its samples; `suffix` is for a histogram's _bucket, _sum and _count.
  const auto head = [&out](Metric m) {
    const MetricSpec& d = spec(m);
    out += util::format("# HELP {} {}\n# TYPE {} {}\n", d.name, d.help, d.name, to_string(d.type));
  };
  const auto sample = [&out](Metric m, std::string_view suffix, const std::string& labels,
                             const auto& value) {
    if (labels.empty()) {
      out += util::format("{}{} {}\n", spec(m).name, suffix, value);
    } else {
      out += util::format("{}{}{{{}}} {}\n", spec(m).name, suffix, labels, value);
    }
  };
  // Every backend's series names its cluster too: agents of two clusters (staging and
  // production) may export backends of the same name, and the rules count writers per both.
  const auto backend = [](const BackendSnapshot& s) {
    return util::format("backend=\"{}\",cluster=\"{}\"", label(s.backend), label(s.cluster));
  };

  head(Metric::backend_up);
  for (const auto& s : all) {
    const bool up = fresh(s, agent, now) && s.reported.state == core::State::up;
    sample(Metric::backend_up, "",
           util::format("{},role=\"{}\",node=\"{}\"", backend(s), config::to_string(s.role),
                        label(s.node)),
           up ? 1 : 0);
  }
  head(Metric::verdict_age);
  for (const auto& s : all) {
    const double age = age_seconds(s, now);
    if (std::isfinite(age)) {
      sample(Metric::verdict_age, "", backend(s), util::format("{:.3f}", age));
    }
  }
  head(Metric::transitions);
  for (const auto& s : all) {
    for (const auto& [key, n] : s.transitions) {
      sample(Metric::transitions, "",
             util::format("{},to=\"{}\",failure=\"{}\"", backend(s), core::to_string(key.first),
                          core::to_string(key.second)),
             n);
    }
  }
  head(Metric::check_failures);
  for (const auto& s : all) {
    for (const auto& [kind, n] : s.failures_by_kind) {
      sample(Metric::check_failures, "", util::format("{},kind=\"{}\"", backend(s), kind), n);
    }
  }
  head(Metric::check_duration);
  for (const auto& s : all) {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < k_duration_buckets.size(); ++i) {
      cumulative += s.duration_buckets[i];
      sample(Metric::check_duration, "_bucket",
             util::format("{},le=\"{}\"", backend(s), k_duration_buckets[i]), cumulative);
    }
    cumulative += s.duration_buckets.back();
    sample(Metric::check_duration, "_bucket", util::format("{},le=\"+Inf\"", backend(s)),
           cumulative);
    sample(Metric::check_duration, "_sum", backend(s), util::format("{:.6f}", s.duration_sum_s));
    sample(Metric::check_duration, "_count", backend(s), s.rounds);
  }
  head(Metric::replica_lag);
  for (const auto& s : all) {
    if (s.last_report && s.last_report->lag && s.last_report->lag->seconds) {
      sample(Metric::replica_lag, "", backend(s),
             util::format("{:.6f}", *s.last_report->lag->seconds));
    }
  }
  head(Metric::probe_connects);
  for (const auto& s : all) {
    sample(Metric::probe_connects, "", backend(s), s.probe_connects);
  }
  head(Metric::probe_closes);
  for (const auto& s : all) {
    for (const auto& [reason, n] : s.probe_closes) {
      sample(Metric::probe_closes, "", util::format("{},reason=\"{}\"", backend(s), reason), n);
    }
  }
  head(Metric::sentinel_subscriptions);
  for (const auto& [cluster, n] : agent.sentinel_subscriptions) {
    sample(Metric::sentinel_subscriptions, "", util::format("cluster=\"{}\"", label(cluster)), n);
  }
  head(Metric::agent_draining);
  sample(Metric::agent_draining, "", "", agent.draining ? 1 : 0);
  head(Metric::agent_connections_open);
  sample(Metric::agent_connections_open, "", "", agent.agent_connections_open);
  head(Metric::agent_connections_refused);
  sample(Metric::agent_connections_refused, "", "", agent.agent_connections_refused);
  head(Metric::agent_connections_dropped);
  for (const auto& [reason, n] : agent.agent_connections_dropped) {
    sample(Metric::agent_connections_dropped, "", util::format("reason=\"{}\"", reason), n);
  }
  head(Metric::http_connections_dropped);
  for (const auto& [reason, n] : agent.http_connections_dropped) {
    sample(Metric::http_connections_dropped, "", util::format("reason=\"{}\"", reason), n);
  }
  head(Metric::agent_reloads);
  sample(Metric::agent_reloads, "", "result=\"ok\"", agent.reloads);
  sample(Metric::agent_reloads, "", "result=\"failed\"", agent.reload_failures);
  head(Metric::manager_votes);
  for (const auto& s : all) {
    if (s.last_report && s.last_report->manager_votes) {
      const core::ManagerVotes& v = *s.last_report->manager_votes;
      const std::size_t none = v.configured - std::min(v.configured, v.this_node + v.another);
      sample(Metric::manager_votes, "", util::format("{},vote=\"this\"", backend(s)), v.this_node);
      sample(Metric::manager_votes, "", util::format("{},vote=\"other\"", backend(s)), v.another);
      sample(Metric::manager_votes, "", util::format("{},vote=\"none\"", backend(s)), none);
    }
  }
  return out;
}

} // namespace dbcheck::agent
