#include "prober.hpp"

#include "log_line.hpp"

#include <core/sentinel_event.hpp>
#include <probe/async.hpp>
#include <probe/name_resolver.hpp>
#include <probe/run_check.hpp>
#include <util/format.hpp>

#include <vector>

namespace dbcheck::agent {

using namespace std::chrono_literals;

Prober::Prober(std::shared_ptr<const config::Config> cfg, std::string cluster, util::HostPort node,
               VerdictCache& cache)
    : m_cfg(std::move(cfg)), m_cluster(std::move(cluster)), m_node(std::move(node)),
      m_cache(cache) {}

std::optional<std::uint64_t> Prober::sentinel_subscriptions() const {
  return m_events ? std::optional{m_events->connects()} : std::nullopt;
}

const std::string& Prober::cluster() const {
  return m_cluster;
}

Prober::~Prober() {
  stop();
}

void Prober::start() {
  m_thread = std::thread([this] { loop(); });
  // Only Sentinels announce a failover; Patroni's choice is read at each round.
  const auto* redis = std::visit(
      config::Overloaded{
          [](const config::PostgresCluster&) -> const config::RedisCluster* { return nullptr; },
          [](const config::RedisCluster& c) { return &c; },
      },
      m_cfg->clusters.at(m_cluster));
  if (redis != nullptr) {
    // A failover should reach the cached verdict at once, not at the next interval.
    m_events = std::make_unique<probe::SentinelWatcher>(*redis, [this](const std::string& sentinel,
                                                                       const std::string& event,
                                                                       const std::string& payload) {
      if (event == "error") {
        log_event("warn", "sentinel subscription failed",
                  {{"cluster", m_cluster}, {"sentinel", sentinel}, {"error", payload}});
        return;
      }
      log_event(
          "info", "sentinel event",
          {{"cluster", m_cluster}, {"sentinel", sentinel}, {"event", event}, {"payload", payload}});
      const auto parsed = core::parse_sentinel_event(event, payload);
      if (parsed && parsed->failover && names_node(parsed->master)) {
        hold_writers(sentinel, event, payload);
      }
      wake();
    });
    m_events->start();
  }
}

bool Prober::names_node(const util::HostPort& named) const {
  // announce-hostnames: the event names the master by host name. A short lookup: the hold
  // only has to come before the next check, which resolves it within its own deadline.
  const auto answers = probe::resolve_names(core::names_to_resolve({named}),
                                            probe::Deadline::in(util::Duration{200}));
  if (!core::unresolved_because(named, answers, m_node).empty()) {
    return true; // it cannot be told whether the failover is of this node: hold, the safe side
  }
  return util::same_endpoint(core::canonical_endpoint(named, answers, m_node), m_node);
}

void Prober::hold_writers(const std::string& sentinel, const std::string& event,
                          const std::string& payload) {
  ++m_holds;
  const auto now = probe::Clock::now();
  for (const auto& [name, b] : m_cfg->backends) {
    if (b.cluster != m_cluster || b.role != config::Role::primary) {
      continue;
    }
    core::Report r;
    r.backend = name;
    r.node = util::to_string(m_node);
    r.role = std::string{config::to_string(b.role)};
    // Sentinel promotes the replica before it announces the new master: a write this master
    // acknowledges from now on may be lost. The next rounds keep it out while any Sentinel
    // still reports the failover in progress, and while the majority names another master.
    r.verdict = {core::State::down, core::Failure::role,
                 util::format("Sentinel {} began failing over this master ({} {}): no writer "
                              "until the failover ends",
                              sentinel, event, payload)};
    r.steps.push_back(core::Step{"manager", sentinel, "PSUBSCRIBE (event)",
                                 util::format("{} {}", event, payload), 0});
    const core::Transition t = m_cache.record_event(r, now);
    if (t.changed) {
      log_event("info", "transition",
                {{"backend", name},
                 {"node", r.node},
                 {"from", t.from ? std::string{core::to_string(*t.from)} : "none"},
                 {"to", std::string{core::to_string(t.to)}},
                 {"failure", std::string{core::to_string(core::Failure::role)}},
                 {"reason", r.verdict.reason}});
    }
  }
}

void Prober::stop() {
  if (m_events) {
    m_events->stop();
  }
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_cv.notify_all();
  if (m_thread.joinable()) {
    m_thread.join();
  }
}

bool Prober::falling() const {
  for (const auto& [name, b] : m_cfg->backends) {
    if (b.cluster != m_cluster) {
      continue;
    }
    if (const auto snap = m_cache.get(name); snap && snap->falling) {
      return true;
    }
  }
  return false;
}

void Prober::wake() {
  {
    std::lock_guard lock(m_mutex);
    m_wake = true;
  }
  m_cv.notify_all();
}

void Prober::loop() {
  const auto interval = std::chrono::duration_cast<probe::Clock::duration>(m_cfg->agent->interval);
  const auto fastinter =
      std::chrono::duration_cast<probe::Clock::duration>(m_cfg->agent->fastinter);
  auto next = probe::Clock::now();
  for (;;) {
    const auto last_start = probe::Clock::now();
    round();
    // While a backend is failing towards down, probe every fastinter (HAProxy's rule for its
    // own checks): going down takes fall rounds, not fall intervals. Coming back keeps the
    // interval (HealthTracker::falling says why).
    next = falling() ? last_start + fastinter : next + interval;
    const auto now = probe::Clock::now();
    if (next < now) {
      next = now; // a late round does not cause a burst of catch-up rounds
    }
    std::unique_lock lock(m_mutex);
    m_cv.wait_until(lock, next, [this] { return m_stop || m_wake; });
    if (m_stop) {
      return;
    }
    if (m_wake) {
      // An event (failover) asks for a round now; a burst of events must not squeeze the
      // fall/rise rounds into milliseconds, so rounds stay at least interval/4 apart.
      m_wake = false;
      next = std::max(probe::Clock::now(), last_start + interval / 4);
      lock.unlock();
      std::this_thread::sleep_until(next);
    }
  }
}

void Prober::round() {
  const config::Config& cfg = *m_cfg;
  const config::Cluster& cluster = cfg.clusters.at(m_cluster);
  // Every check of a round must end well inside the interval: rounds never overlap.
  const auto interval = cfg.agent->interval;
  const util::Duration cap = interval - std::max(util::Duration{50}, interval / 10);
  std::vector<std::future<core::Report>> running;
  const std::uint64_t holds_before = m_holds.load();
  const auto started = probe::Clock::now();
  for (const auto& [name, b] : cfg.backends) {
    if (b.cluster != m_cluster) {
      continue;
    }
    config::Backend backend = b;
    backend.timeout = std::min(backend.timeout, cap);
    auto& connections = m_connections[name];
    if (!connections) {
      connections = std::make_shared<probe::ConnectionCache>();
    }
    try {
      running.push_back(probe::spawn([cluster, backend, node = m_node, started, connections] {
        // The agent runs on the node ([agent.local]): its checks read the node's disks too.
        return probe::run_check(cluster, backend, node, started, connections,
                                probe::Vantage::on_node);
      }));
    } catch (const std::exception& e) {
      // No thread to be had: record a failing round rather than die (fail closed).
      core::Report r;
      r.backend = name;
      r.node = util::to_string(m_node);
      r.verdict = {core::State::down, core::Failure::internal,
                   util::format("internal error: cannot start the check: {}", e.what())};
      m_cache.record(r, probe::Clock::now());
    }
  }
  for (auto& f : running) {
    core::Report report = f.get(); // run_check is bounded by its own deadline
    if (m_holds.load() != holds_before &&
        cfg.backends.at(report.backend).role == config::Role::primary) {
      continue; // a failover began while this was asked: its answer is from before
    }
    const auto& connections = m_connections[report.backend];
    const core::Transition t = m_cache.record(report, probe::Clock::now(),
                                              {connections->connects(), connections->closes()});
    if (t.changed) {
      const auto snap = m_cache.get(report.backend);
      log_event("info", "transition",
                {{"backend", report.backend},
                 {"node", report.node},
                 {"from", t.from ? std::string{core::to_string(*t.from)} : "none"},
                 {"to", std::string{core::to_string(t.to)}},
                 {"failure", snap ? std::string{core::to_string(snap->reported.failure)} : ""},
                 {"reason", snap ? snap->reported.reason : report.verdict.reason}});
    }
  }
}

} // namespace dbcheck::agent
