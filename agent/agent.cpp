#include "agent.hpp"

#include "agent_reply.hpp"
#include "agent_server.hpp"
#include "http_server.hpp"
#include "log_line.hpp"

#include <config/load_config.hpp>
#include <util/format.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace dbcheck::agent {
namespace {

using probe::Clock;

// The file that says "this agent had drained its servers" (survives a restart).
std::string drain_marker(const config::Config& cfg) {
  return cfg.agent->state_dir + "/drained";
}

// How long "ready" is sent after our own drain ends.
probe::Clock::duration ready_window(const config::Config& cfg) {
  return std::chrono::duration_cast<probe::Clock::duration>(cfg.agent->ready_window);
}

} // namespace

void Agent::start_probers() {
  const auto cfg = config();
  std::vector<std::string> tracked;
  for (const auto& [cluster, node] : cfg->agent->local) {
    for (const auto& [name, b] : cfg->backends) {
      if (b.cluster == cluster) {
        m_cache.track(b, node,
                      core::TrackerPolicy{cfg->agent->rise, cfg->agent->fall,
                                          cfg->agent->lag_window, b.role == config::Role::primary,
                                          cfg->agent->interval});
        tracked.push_back(name);
      }
    }
    auto prober = std::make_unique<Prober>(cfg, cluster, node, m_cache);
    prober->start();
    std::lock_guard lock(m_probers_mutex);
    m_probers.push_back(std::move(prober));
  }
  m_cache.retain(tracked);
}

void Agent::stop_probers() {
  std::vector<std::unique_ptr<Prober>> stopping;
  {
    std::lock_guard lock(m_probers_mutex);
    stopping.swap(m_probers);
  }
  stopping.clear(); // each destructor stops and joins, outside the lock /metrics takes
}

std::shared_ptr<const config::Config> Agent::config() const {
  std::lock_guard lock(m_mutex);
  return m_cfg;
}

void Agent::reload() {
  const std::string path = config()->path;
  auto fresh = config::all_readable(config::load_config(path));
  if (!fresh || !fresh->agent || fresh->agent->local.empty()) {
    ++m_reload_failures;
    // The same rules as at start-up: a file the agent could not start with is refused.
    const std::string why = !fresh          ? fresh.error().messages.front()
                            : !fresh->agent ? "no [agent] section"
                                            : "[agent.local] names no node";
    log_event("error", "reload failed, keeping the running configuration",
              {{"config", path}, {"error", why}});
    return;
  }
  const auto old = config();
  if (old->agent->listen != fresh->agent->listen ||
      old->agent->http_listen != fresh->agent->http_listen ||
      old->agent->max_connections != fresh->agent->max_connections) {
    log_event("warn", "listen, http_listen and max_connections change only on a restart", {});
  }
  stop_probers();
  {
    std::lock_guard lock(m_mutex);
    m_cfg = std::make_shared<const config::Config>(std::move(*fresh));
  }
  start_probers();
  ++m_reloads;
  log_event("info", "configuration reloaded", {{"config", path}});
}

void Agent::begin_shutdown() {
  std::lock_guard lock(m_mutex);
  if (!m_shutdown_since) {
    m_shutdown_since = Clock::now();
  }
}

std::optional<Clock::time_point> Agent::shutdown_since() const {
  std::lock_guard lock(m_mutex);
  return m_shutdown_since;
}

void Agent::update_drain(Clock::time_point now) {
  const auto cfg = config();
  std::string why;
  if (shutdown_since()) {
    why = "dbcheck-agent is shutting down";
  } else if (cfg->agent->drain_file) {
    struct stat st {};
    if (::stat(cfg->agent->drain_file->c_str(), &st) == 0) {
      why = util::format("drain file {} present", *cfg->agent->drain_file);
    }
  }
  const std::string reason = why;
  DrainChange change;
  {
    std::lock_guard lock(m_mutex);
    change = m_drain.update(std::move(why), now, ready_window(*cfg));
  }
  const std::string marker = drain_marker(*cfg);
  if (change.forget_marker) {
    ::unlink(marker.c_str()); // ready has been said long enough: forget our drain
  }
  if (change.started) {
    if (FILE* f = std::fopen(marker.c_str(), "w")) {
      std::fclose(f);
    }
    log_event("info", "drain started", {{"reason", reason}});
  } else if (change.ended) {
    log_event("info", "drain ended", {});
  }
}

void Agent::resume_after_restart(Clock::time_point now) {
  const auto cfg = config();
  if (::mkdir(cfg->agent->state_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    log_event("warn", "state_dir unusable: a drain will not be undone after a restart",
              {{"state_dir", cfg->agent->state_dir}, {"error", std::strerror(errno)}});
  }
  struct stat st {};
  const bool marker = ::stat(drain_marker(*cfg).c_str(), &st) == 0;
  {
    std::lock_guard lock(m_mutex);
    m_drain.resume(marker, now, ready_window(*cfg));
  }
  if (marker) {
    log_event("info", "resuming after our own drain: sending ready", {});
  }
}

std::pair<bool, std::string> Agent::drain_state() const {
  std::lock_guard lock(m_mutex);
  return {m_drain.draining(), m_drain.reason()};
}

AgentStatus Agent::status(Clock::time_point now, bool draining, std::string why) const {
  AgentStatus s;
  s.draining = draining;
  s.drain_reason = std::move(why);
  s.uptime_s = std::chrono::duration<double>(now - m_started).count();
  s.stale_after_s = std::chrono::duration<double>(config()->agent->stale_after).count();
  s.expose_reasons = config()->agent->expose_reasons;
  s.reloads = m_reloads;
  s.reload_failures = m_reload_failures;
  if (AgentServer* server = m_agent_server.load()) {
    s.agent_connections_open = server->open_connections();
    s.agent_connections_refused = server->refused_connections();
    s.agent_connections_dropped = server->dropped_connections();
  }
  if (HttpServer* server = m_http_server.load()) {
    s.http_connections_dropped = server->dropped_connections();
  }
  std::lock_guard lock(m_probers_mutex);
  for (const auto& p : m_probers) {
    if (const auto n = p->sentinel_subscriptions()) {
      s.sentinel_subscriptions[p->cluster()] = *n;
    }
  }
  return s;
}

std::string Agent::respond(std::string_view requested) {
  const auto now = Clock::now();
  std::shared_ptr<const config::Config> cfg;
  ReplyInput in;
  {
    std::lock_guard lock(m_mutex);
    cfg = m_cfg;
    in.draining = m_drain.draining();
    in.drain_reason = m_drain.reason();
    in.send_ready = m_drain.send_ready(now);
  }
  in.reasons = cfg->agent->expose_reasons;
  const std::string name =
      requested.empty() ? cfg->agent->default_backend.value_or("") : std::string{requested};
  in.backend = name.empty() ? "(none sent, no default_backend)" : name;
  const auto view = m_cache.reply_view(name);
  in.known = view.has_value();
  if (!in.known && cfg->backends.count(name) != 0) {
    // Configured, but this host has no node in its cluster ([agent.local]).
    in.known = true;
    in.reported = {
        core::State::down, core::Failure::config,
        util::format("no [agent.local] node for cluster {}", cfg->backends.at(name).cluster)};
  } else if (view) {
    const double age =
        view->started ? std::chrono::duration<double>(now - view->updated).count() : 0.0;
    in.reported = view->reported;
    in.stale =
        !view->started || age > std::chrono::duration<double>(cfg->agent->stale_after).count();
    in.age_s = age;
  }
  return agent_reply(in);
}

HttpAnswer Agent::http(std::string_view path) {
  const auto now = Clock::now();
  auto [draining, why] = drain_state();
  const AgentStatus st = status(now, draining, why);
  const HttpRoute route = route_http_path(path);
  // Copy only what the page shows: one snapshot for /backend/<name>, none for /live.
  std::vector<BackendSnapshot> shown;
  if (route.page == HttpRoute::Page::backend) {
    if (auto snap = m_cache.get(route.backend)) {
      shown.push_back(std::move(*snap));
    }
  } else if (route.page == HttpRoute::Page::health || route.page == HttpRoute::Page::metrics) {
    shown = m_cache.all();
  }
  return answer_http(route, shown, st, now);
}

bool Agent::all_probed() const {
  for (const auto& s : m_cache.all()) {
    if (!s.started) {
      return false;
    }
  }
  return true;
}

bool Agent::probers_alive(Clock::time_point now) const {
  const AgentStatus st = status(now, false, "");
  for (const auto& s : m_cache.all()) {
    if (!fresh(s, st, now) &&
        std::chrono::duration<double>(now - m_started).count() > 2 * st.stale_after_s) {
      return false;
    }
  }
  return true;
}

} // namespace dbcheck::agent
