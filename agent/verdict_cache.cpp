#include "verdict_cache.hpp"

#include <algorithm>
#include <chrono>

namespace dbcheck::agent {
namespace {

util::Duration since(probe::Clock::time_point origin, probe::Clock::time_point now) {
  return std::chrono::duration_cast<util::Duration>(now - origin);
}

void fill_from_tracker(BackendSnapshot& s, const core::HealthTracker& t, util::Duration now_ms) {
  s.started = t.started();
  s.reported = t.reported();
  s.raw = t.last_raw();
  s.successes = t.successes();
  s.failures = t.failures();
  s.falling = t.falling();
  s.pending = t.pending();
  s.state_since_s = static_cast<double>((now_ms - t.changed_at()).count()) / 1000.0;
}

} // namespace

void VerdictCache::track(const config::Backend& backend, const util::HostPort& node,
                         core::TrackerPolicy policy) {
  std::lock_guard lock(m_mutex);
  if (const auto it = m_entries.find(backend.name); it != m_entries.end()) {
    const BackendSnapshot& s = it->second.snap;
    const core::TrackerPolicy& p = it->second.policy;
    if (s.cluster == backend.cluster && s.node == util::to_string(node) && s.role == backend.role &&
        p.rise == policy.rise && p.fall == policy.fall && p.lag_window == policy.lag_window &&
        p.writer == policy.writer && p.interval == policy.interval) {
      return; // unchanged by a reload: keep the state and counters
    }
    m_entries.erase(it); // another node, role or damping: start afresh (not fresh until probed)
  }
  Entry e{BackendSnapshot{}, core::HealthTracker(policy), probe::Clock::now(), policy};
  e.snap.backend = backend.name;
  e.snap.cluster = backend.cluster;
  e.snap.node = util::to_string(node);
  e.snap.role = backend.role;
  m_entries.emplace(backend.name, std::move(e));
}

void VerdictCache::retain(const std::vector<std::string>& keep) {
  std::lock_guard lock(m_mutex);
  for (auto it = m_entries.begin(); it != m_entries.end();) {
    it = std::find(keep.begin(), keep.end(), it->first) == keep.end() ? m_entries.erase(it)
                                                                      : std::next(it);
  }
}

core::Transition VerdictCache::observe(Entry& e, const core::Report& report,
                                       probe::Clock::time_point now) {
  const util::Duration now_ms = since(e.origin, now);
  const core::Transition t = e.tracker.observe(report.verdict, now_ms);
  BackendSnapshot& s = e.snap;
  fill_from_tracker(s, e.tracker, now_ms);
  s.last_report = report;
  if (!core::passes(report.verdict)) {
    ++s.failures_by_kind[std::string{core::to_string(report.verdict.failure)}];
  }
  if (t.changed) {
    ++s.transitions[{t.to, s.reported.failure}];
  }
  return t;
}

core::Transition VerdictCache::record(const core::Report& report, probe::Clock::time_point now,
                                      ProbeConnections connections) {
  std::lock_guard lock(m_mutex);
  const auto it = m_entries.find(report.backend);
  if (it == m_entries.end()) {
    return {};
  }
  Entry& e = it->second;
  const core::Transition t = observe(e, report, now);
  BackendSnapshot& s = e.snap;
  s.updated = now;
  s.probe_connects = connections.connects;
  s.probe_closes = std::move(connections.closes);
  ++s.rounds;
  const double seconds = report.elapsed_ms / 1000.0;
  const auto bucket = std::find_if(k_duration_buckets.begin(), k_duration_buckets.end(),
                                   [&](double b) { return seconds <= b; });
  ++s.duration_buckets[static_cast<std::size_t>(bucket - k_duration_buckets.begin())];
  s.duration_sum_s += seconds;
  return t;
}

core::Transition VerdictCache::record_event(const core::Report& report,
                                            probe::Clock::time_point now) {
  std::lock_guard lock(m_mutex);
  const auto it = m_entries.find(report.backend);
  if (it == m_entries.end() || !it->second.tracker.started()) {
    return {}; // before the first round there is nothing to hold down: the ports are closed
  }
  return observe(it->second, report, now);
}

std::optional<ReplyView> VerdictCache::reply_view(const std::string& backend) const {
  std::lock_guard lock(m_mutex);
  const auto it = m_entries.find(backend);
  if (it == m_entries.end()) {
    return std::nullopt;
  }
  const core::HealthTracker& t = it->second.tracker;
  return ReplyView{t.reported(), t.started(), it->second.snap.updated};
}

std::optional<BackendSnapshot> VerdictCache::get(const std::string& backend) const {
  std::lock_guard lock(m_mutex);
  const auto it = m_entries.find(backend);
  if (it == m_entries.end()) {
    return std::nullopt;
  }
  BackendSnapshot s = it->second.snap;
  fill_from_tracker(s, it->second.tracker, since(it->second.origin, probe::Clock::now()));
  return s;
}

std::vector<BackendSnapshot> VerdictCache::all() const {
  std::lock_guard lock(m_mutex);
  std::vector<BackendSnapshot> out;
  for (const auto& [name, e] : m_entries) {
    BackendSnapshot s = e.snap;
    fill_from_tracker(s, e.tracker, since(e.origin, probe::Clock::now()));
    out.push_back(std::move(s));
  }
  return out;
}

} // namespace dbcheck::agent
