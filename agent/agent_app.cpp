#include "agent_app.hpp"

#include "agent_reply.hpp"
#include "agent_server.hpp"
#include "drain_state.hpp"
#include "http_routes.hpp"
#include "http_server.hpp"
#include "log_line.hpp"
#include "prober.hpp"
#include "status_render.hpp"
#include "verdict_cache.hpp"

#include <config/load_config.hpp>
#include <probe/library_versions.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

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
using namespace std::chrono_literals;

// Everything the probers, the two servers and the signal loop share.
class Agent {
public:
  explicit Agent(std::shared_ptr<const config::Config> cfg) : m_cfg(std::move(cfg)) {}

  // Starts one prober per [agent.local] cluster and tracks its backends.
  void start_probers() {
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

  void stop_probers() {
    std::vector<std::unique_ptr<Prober>> stopping;
    {
      std::lock_guard lock(m_probers_mutex);
      stopping.swap(m_probers);
    }
    stopping.clear(); // each destructor stops and joins, outside the lock /metrics takes
  }

  std::shared_ptr<const config::Config> config() const {
    std::lock_guard lock(m_mutex);
    return m_cfg;
  }

  // SIGHUP: a new config replaces the old only if it loads; the old keeps running otherwise.
  void reload() {
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

  void begin_shutdown() {
    std::lock_guard lock(m_mutex);
    if (!m_shutdown_since) {
      m_shutdown_since = Clock::now();
    }
  }

  std::optional<Clock::time_point> shutdown_since() const {
    std::lock_guard lock(m_mutex);
    return m_shutdown_since;
  }

  // Re-reads the drain state (shutdown, drain file) on the main loop's tick, so the answering
  // threads never stat() a file (a hung mount would freeze them) and transitions are decided
  // in one place. When a drain of our own ends it opens the "ready" window: only then does
  // the agent send "ready", so an operator's drain set through HAProxy's runtime API survives.
  // A marker in state_dir remembers our drain across a restart.
  void update_drain(Clock::time_point now) {
    const auto cfg = config();
    std::string why;
    if (shutdown_since()) {
      why = "dbcheck-agent is shutting down";
    } else if (cfg->agent->drain_file) {
      struct stat st {};
      if (::stat(cfg->agent->drain_file->c_str(), &st) == 0) {
        why = fmt::format("drain file {} present", *cfg->agent->drain_file);
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

  // At start-up: a drain this agent set before a restart is still in HAProxy; undo it.
  void resume_after_restart(Clock::time_point now) {
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

  std::pair<bool, std::string> drain_state() const {
    std::lock_guard lock(m_mutex);
    return {m_drain.draining(), m_drain.reason()};
  }

  AgentStatus status(Clock::time_point now, bool draining, std::string why) const {
    AgentStatus s;
    s.draining = draining;
    s.drain_reason = std::move(why);
    s.uptime_s = std::chrono::duration<double>(now - m_started).count();
    s.stale_after_s = std::chrono::duration<double>(config()->agent->stale_after).count();
    s.reloads = m_reloads;
    s.reload_failures = m_reload_failures;
    if (AgentServer* server = m_agent_server.load()) {
      s.agent_connections_open = server->open_connections();
      s.agent_connections_refused = server->refused_connections();
      s.agent_connections_dropped = server->dropped_connections();
    }
    std::lock_guard lock(m_probers_mutex);
    for (const auto& p : m_probers) {
      if (const auto n = p->sentinel_subscriptions()) {
        s.sentinel_subscriptions[p->cluster()] = *n;
      }
    }
    return s;
  }

  // The agent-check answer for `requested` ("" = no agent-send line): the hot path, so one
  // lock for the agent's own state and one small copy out of the cache.
  std::string respond(std::string_view requested) {
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
          fmt::format("no [agent.local] node for cluster {}", cfg->backends.at(name).cluster)};
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

  HttpAnswer http(std::string_view path) {
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

  // True while every tracked backend has a fresh verdict (the watchdog's health signal).
  // True once every tracked backend has finished its first round.
  bool all_probed() const {
    for (const auto& s : m_cache.all()) {
      if (!s.started) {
        return false;
      }
    }
    return true;
  }

  bool probers_alive(Clock::time_point now) const {
    const AgentStatus st = status(now, false, "");
    for (const auto& s : m_cache.all()) {
      if (!fresh(s, st, now) &&
          std::chrono::duration<double>(now - m_started).count() > 2 * st.stale_after_s) {
        return false;
      }
    }
    return true;
  }

  void set_agent_server(AgentServer* s) { m_agent_server = s; }

private:
  mutable std::mutex m_mutex;
  std::shared_ptr<const config::Config> m_cfg;
  VerdictCache m_cache;
  mutable std::mutex m_probers_mutex; // m_probers: replaced on reload, read by /metrics
  std::vector<std::unique_ptr<Prober>> m_probers;
  std::optional<Clock::time_point> m_shutdown_since;
  DrainState m_drain;
  Clock::time_point m_started = Clock::now();
  std::atomic<std::uint64_t> m_reloads{0};
  std::atomic<std::uint64_t> m_reload_failures{0};
  std::atomic<AgentServer*> m_agent_server{nullptr};
};

// As many open files as the hard limit allows: each idle poller holds one for up to 100 ms.
// Returns the soft limit in force afterwards.
std::size_t raise_nofile_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) {
    return 1024;
  }
  if (r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
    ::getrlimit(RLIMIT_NOFILE, &r);
  }
  return static_cast<std::size_t>(r.rlim_cur);
}

// Keeps descriptors for the probers' database connections whatever the pollers do.
constexpr std::size_t k_fd_reserve = 512;

} // namespace

int run(int argc, char** argv) {
  CLI::App app{"dbcheck-agent: answers HAProxy's agent-check (and HTTP checks) from cached,\n"
               "damped verdicts of this host's database nodes. Configuration: the [agent]\n"
               "section of dbcheck's TOML file. SIGHUP reloads it, SIGTERM drains then exits.",
               "dbcheck-agent"};
  app.set_version_flag("--version", probe::version_banner("dbcheck-agent"));
  std::string path;
  app.add_option("--config", path,
                 "configuration file (default: $DBCHECK_CONFIG, else "
                 "/etc/dbcheck/dbcheck.toml)")
      ->type_name("FILE");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (path.empty()) {
    const char* env = std::getenv("DBCHECK_CONFIG");
    path = env != nullptr && *env != '\0' ? env : std::string{config::k_default_config_path};
  }

  // Signals are taken synchronously by the main loop: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  const std::size_t fd_limit = raise_nofile_limit();

  auto loaded = config::all_readable(config::load_config(path));
  if (!loaded) {
    for (const auto& m : loaded.error().messages) {
      std::cerr << "configuration error: " << m << '\n';
    }
    return 2;
  }
  if (!loaded->agent) {
    std::cerr << "configuration error: " << path << ": no [agent] section\n";
    return 2;
  }
  if (loaded->agent->local.empty()) {
    std::cerr << "configuration error: " << path
              << ": [agent.local] names no node of this host (cluster = \"host:port\")\n";
    return 2;
  }
  Agent agent(std::make_shared<const config::Config>(std::move(*loaded)));
  const auto cfg = agent.config();

  std::size_t max_connections = cfg->agent->max_connections;
  if (fd_limit > k_fd_reserve && max_connections > fd_limit - k_fd_reserve) {
    max_connections = fd_limit - k_fd_reserve;
    log_event("warn", "agent max_connections lowered to fit the open-file limit",
              {{"max_connections", std::to_string(max_connections)},
               {"nofile", std::to_string(fd_limit)}});
  }
  AgentServer agent_server(cfg->agent->listen, max_connections,
                           [&agent](std::string_view b) { return agent.respond(b); });
  HttpServer http_server(cfg->agent->http_listen,
                         [&agent](std::string_view p) { return agent.http(p); });
  agent.start_probers();
  // Open the ports only once every backend has a verdict (at most two intervals): before that
  // the only honest answer is "no result yet", and HAProxy's agent, with rise/fall fixed at
  // 1, would take every server down on it. A refused connection changes nothing in HAProxy.
  const auto first_round_by = Clock::now() + 2 * cfg->agent->interval;
  while (!agent.all_probed() && Clock::now() < first_round_by) {
    std::this_thread::sleep_for(20ms);
  }
  agent.resume_after_restart(Clock::now());
  agent.update_drain(Clock::now());
  agent.set_agent_server(&agent_server);
  if (auto r = agent_server.start(); !r) {
    std::cerr << "dbcheck-agent: " << r.error() << '\n';
    return 1;
  }
  if (auto r = http_server.start(); !r) {
    std::cerr << "dbcheck-agent: " << r.error() << '\n';
    return 1;
  }
  log_event("info", "started",
            {{"config", path},
             {"agent_listen", util::to_string(cfg->agent->listen)},
             {"http_listen", util::to_string(cfg->agent->http_listen)}});
  sd_notify(0, "READY=1");
  std::uint64_t watchdog_usec = 0;
  const bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;

  const timespec tick{0, 200'000'000};
  for (;;) {
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    const auto now = Clock::now();
    agent.update_drain(now);
    if (sig == SIGHUP) {
      sd_notify(0, "RELOADING=1");
      agent.reload();
      sd_notify(0, "READY=1");
    } else if (sig == SIGTERM || sig == SIGINT) {
      if (agent.shutdown_since()) {
        log_event("info", "second signal: stopping now", {});
        break;
      }
      agent.begin_shutdown();
      agent.update_drain(Clock::now());
      log_event("info", "draining before exit",
                {{"grace", util::format_duration(agent.config()->agent->shutdown_grace)}});
      sd_notify(0, "STOPPING=1");
    }
    if (const auto since = agent.shutdown_since();
        since && now - *since >= agent.config()->agent->shutdown_grace) {
      break;
    }
    if (watchdog && agent.probers_alive(now)) {
      sd_notify(0, "WATCHDOG=1");
    }
  }
  log_event("info", "stopped", {});
  http_server.stop();
  agent_server.stop();
  agent.stop_probers();
  return 0;
}

} // namespace dbcheck::agent
