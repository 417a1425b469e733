#pragma once
// One prober per (cluster, local node): a thread that checks every backend of the cluster
// once per interval (rounds never overlap), and at once when woken by an event.

#include "verdict_cache.hpp"

#include <config/config.hpp>
#include <probe/connection_cache.hpp>
#include <probe/sentinel_events.hpp>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace dbcheck::agent {

class Prober {
public:
  // --- Interface ---

  // A prober for `node` of `cluster` in `cfg`, recording into `cache`; not running yet.
  Prober(std::shared_ptr<const config::Config> cfg, std::string cluster, util::HostPort node,
         VerdictCache& cache);
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;
  // Stops and joins the thread.
  ~Prober();

  // Starts the probing thread.
  void start();

  // Asks the thread to finish its round and stop; joins it.
  void stop();

  // Starts the next round now instead of at the next interval (e.g. on a failover event).
  void wake();

  // The cluster it probes.
  const std::string& cluster() const;

  // Sentinel event subscriptions established so far (Redis clusters; nullopt otherwise).
  std::optional<std::uint64_t> sentinel_subscriptions() const;

private:
  void loop();
  void round();
  // True when a backend of this cluster is up but failing towards down (probe at fastinter).
  bool falling() const;
  // True when a Sentinel event's master is this node: by address, or by the one address its
  // host name resolves to within 200 ms (core/endpoint_names.hpp); also when a name cannot be
  // told (unresolved, several hosts): holding writers is the safe side.
  bool names_node(const util::HostPort& named) const;
  // A Sentinel began failing over this node's master: every writer backend of the cluster
  // goes down now, not at the next round (called on a watcher thread).
  void hold_writers(const std::string& sentinel, const std::string& event,
                    const std::string& payload);

  std::shared_ptr<const config::Config> m_cfg;
  std::string m_cluster;
  util::HostPort m_node;
  VerdictCache& m_cache;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_stop = false;
  bool m_wake = false;
  std::thread m_thread;
  std::unique_ptr<probe::SentinelWatcher> m_events; // Redis clusters only
  // Writer holds made by events so far: a round that began before one drops its writer
  // results, which were asked before the failover began.
  std::atomic<std::uint64_t> m_holds{0};
  // Per backend: connections kept open between rounds (each backend's check runs on its own
  // thread, so each has its own connections).
  std::map<std::string, std::shared_ptr<probe::ConnectionCache>> m_connections;
};

} // namespace dbcheck::agent
