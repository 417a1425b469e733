#pragma once
// Sentinel pub/sub: a failover reaches the agent's cached verdict within milliseconds instead
// of one interval. One thread per configured Sentinel, reconnecting on failure.

#include <config/config.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace dbcheck::probe {

// Called with (sentinel "host:port", event channel, message) for each event of our master
// (core/sentinel_event.hpp names it exactly),
// and with event "error" when a subscription fails (it is retried every second).
using SentinelEventFn =
    std::function<void(const std::string& sentinel, const std::string& event, const std::string&)>;

// The channels dbcheck listens to (and the ACL must allow): every step of a failover from
// +try-failover to +switch-master, its abort, and sdown/odown.
const std::vector<std::string>& sentinel_event_channels();

class SentinelWatcher {
public:
  // --- Interface ---

  // Watches every Sentinel of `cluster`; `on_event` runs on the watcher threads.
  SentinelWatcher(config::RedisCluster cluster, SentinelEventFn on_event);
  SentinelWatcher(const SentinelWatcher&) = delete;
  SentinelWatcher& operator=(const SentinelWatcher&) = delete;
  // Stops and joins the threads (within about half a second).
  ~SentinelWatcher();

  // Starts one thread per Sentinel.
  void start();

  // Stops them.
  void stop();

  // Subscriptions (re)established since start, for /metrics.
  std::uint64_t connects() const { return m_connects.load(); }

private:
  void watch(const util::HostPort& sentinel);

  config::RedisCluster m_cluster;
  SentinelEventFn m_on_event;
  std::atomic<bool> m_stop{false};
  std::atomic<std::uint64_t> m_connects{0};
  std::vector<std::thread> m_threads;
};

} // namespace dbcheck::probe
