#pragma once
// The agent's shared state: per backend, the damped verdict, the last full report and the
// counters that /metrics exports. Written by the probers, read by the two servers.

#include <config/config.hpp>
#include <core/health_tracker.hpp>
#include <core/report.hpp>
#include <probe/deadline.hpp>

#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dbcheck::agent {

// Upper bounds (seconds) of the check-duration histogram buckets.
inline constexpr std::array<double, 8> k_duration_buckets = {0.005, 0.01, 0.025, 0.05,
                                                             0.1,   0.25, 0.5,   1.0};

// Everything known about one backend, as a copy that can be read without the lock.
struct BackendSnapshot {
  std::string backend;
  std::string cluster;
  std::string node;
  config::Role role = config::Role::primary;
  bool started = false;   // at least one round done
  core::Verdict reported; // damped
  core::Verdict raw;      // last round, undamped
  int successes = 0;
  int failures = 0;
  bool falling = false;        // up but failing, fewer than fall rounds (core HealthTracker)
  core::PendingChange pending; // the change under way, as data
  std::optional<core::Report> last_report;
  probe::Clock::time_point updated{}; // when the last round finished
  double state_since_s = 0;           // seconds the reported state has held
  std::uint64_t rounds = 0;
  std::map<std::string, std::uint64_t> failures_by_kind;                       // raw failing rounds
  std::map<std::pair<core::State, core::Failure>, std::uint64_t> transitions;  // (to, failure)
  std::array<std::uint64_t, k_duration_buckets.size() + 1> duration_buckets{}; // last = +Inf
  double duration_sum_s = 0;
  std::uint64_t probe_connects = 0; // connections opened by the prober (first + reconnects)
  std::map<std::string, std::uint64_t> probe_closes; // kept connections closed, by reason
};

// The prober's connection counters for one backend, as of a round.
struct ProbeConnections {
  std::uint64_t connects = 0;                  // opened (first ones and reconnects)
  std::map<std::string, std::uint64_t> closes; // closed, by reason (ConnectionCache::closes)
};

// What one agent-check reply needs of a backend: a few fields, not the report and counters.
struct ReplyView {
  core::Verdict reported;             // damped
  bool started = false;               // at least one round done
  probe::Clock::time_point updated{}; // when the last round finished
};

// Thread-safe map of backend name -> state.
class VerdictCache {
public:
  // --- Interface ---

  // Starts tracking `backend` for `node` with `policy`; an unchanged backend keeps its state,
  // one whose cluster, node, role or policy changed (a reload) starts afresh.
  void track(const config::Backend& backend, const util::HostPort& node,
             core::TrackerPolicy policy);

  // Forgets every backend not in `keep` (after a reload).
  void retain(const std::vector<std::string>& keep);

  // Records one round's report for its backend at `now` (with the prober's connection
  // counters so far); returns the transition it caused.
  core::Transition record(const core::Report& report, probe::Clock::time_point now,
                          ProbeConnections connections = {});

  // Records a verdict that an event decided between rounds (a Sentinel starting a failover)
  // through the same damping; it is not a round: counters of rounds, durations and
  // connections, and the freshness time, are left as they were.
  core::Transition record_event(const core::Report& report, probe::Clock::time_point now);

  // A copy of one backend's state, or nullopt if it is not tracked.
  std::optional<BackendSnapshot> get(const std::string& backend) const;

  // The reply path's view of one backend (one lock, no deep copy), or nullopt if untracked.
  std::optional<ReplyView> reply_view(const std::string& backend) const;

  // Copies of every backend's state, by name.
  std::vector<BackendSnapshot> all() const;

private:
  struct Entry;
  // Feeds `report` to the entry's tracker and its failure/transition counters; the caller
  // holds m_mutex.
  static core::Transition observe(Entry& e, const core::Report& report,
                                  probe::Clock::time_point now);

  struct Entry {
    BackendSnapshot snap;
    core::HealthTracker tracker;
    probe::Clock::time_point origin;
    core::TrackerPolicy policy;
  };
  mutable std::mutex m_mutex;
  std::map<std::string, Entry> m_entries;
};

} // namespace dbcheck::agent
