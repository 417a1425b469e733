#pragma once
// The agent's shared state and what the probers, the two servers and the signal loop ask of
// it: configuration and reload, the probers, the drain, and the answers.

#include "drain_state.hpp"
#include "http_routes.hpp"
#include "prober.hpp"
#include "status_render.hpp"
#include "verdict_cache.hpp"

#include <config/config.hpp>
#include <probe/deadline.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dbcheck::agent {

class AgentServer;
class HttpServer;

// Everything the probers, the two servers and the signal loop share.
class Agent {
public:
  // --- Interface ---

  // An agent for `cfg`; nothing runs until start_probers().
  explicit Agent(std::shared_ptr<const config::Config> cfg) : m_cfg(std::move(cfg)) {}

  // Starts one prober per [agent.local] cluster and tracks its backends.
  void start_probers();

  // Stops every prober (each finishes its round) and joins them.
  void stop_probers();

  // The configuration in force.
  std::shared_ptr<const config::Config> config() const;

  // SIGHUP: a new config replaces the old only if it loads; the old keeps running otherwise.
  void reload();

  // SIGTERM: start draining before exit (once; later calls keep the first time).
  void begin_shutdown();

  // When the shutdown began, if it has.
  std::optional<probe::Clock::time_point> shutdown_since() const;

  // Re-reads the drain state (shutdown, drain file) on the main loop's tick, so the answering
  // threads never stat() a file (a hung mount would freeze them) and transitions are decided
  // in one place. When a drain of our own ends it opens the "ready" window: only then does
  // the agent send "ready", so an operator's drain set through HAProxy's runtime API survives.
  // A marker in state_dir remembers our drain across a restart.
  void update_drain(probe::Clock::time_point now);

  // At start-up: a drain this agent set before a restart is still in HAProxy; undo it.
  void resume_after_restart(probe::Clock::time_point now);

  // Whether draining, and why.
  std::pair<bool, std::string> drain_state() const;

  // The agent-wide figures /health and /metrics show at `now`.
  AgentStatus status(probe::Clock::time_point now, bool draining, std::string why) const;

  // The agent-check answer for `requested` ("" = no agent-send line): the hot path, so one
  // lock for the agent's own state and one small copy out of the cache.
  std::string respond(std::string_view requested);

  // The HTTP answer for `path` (/backend/<name>, /health, /live, /metrics).
  HttpAnswer http(std::string_view path);

  // True once every tracked backend has finished its first round.
  bool all_probed() const;

  // True while every tracked backend has a fresh verdict (the watchdog's health signal).
  bool probers_alive(probe::Clock::time_point now) const;

  // The agent-check server, for its connection counters.
  void set_agent_server(AgentServer* s) { m_agent_server = s; }
  // The HTTP server whose counters /metrics shows (not owned; null: none).
  void set_http_server(HttpServer* s) { m_http_server = s; }

private:
  mutable std::mutex m_mutex;
  std::shared_ptr<const config::Config> m_cfg;
  VerdictCache m_cache;
  mutable std::mutex m_probers_mutex; // m_probers: replaced on reload, read by /metrics
  std::vector<std::unique_ptr<Prober>> m_probers;
  std::optional<probe::Clock::time_point> m_shutdown_since;
  DrainState m_drain;
  probe::Clock::time_point m_started = probe::Clock::now();
  std::atomic<std::uint64_t> m_reloads{0};
  std::atomic<std::uint64_t> m_reload_failures{0};
  std::atomic<AgentServer*> m_agent_server{nullptr};
  std::atomic<HttpServer*> m_http_server{nullptr};
};

} // namespace dbcheck::agent
