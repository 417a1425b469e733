#pragma once
// What both engines' switchovers share: the time budgets, the operator's credentials, the
// phase driver (times, progress, interruptions, the result), the polling wait, and the writer
// check that confirms a new primary.

#include "switchover.hpp"

#include <config/secret.hpp>
#include <core/report.hpp>
#include <probe/deadline.hpp>
#include <probe/peers.hpp>

#include <tl/expected.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace dbcheck::switchover {

inline constexpr auto k_poll = std::chrono::milliseconds{200}; // between two looks while waiting
inline constexpr util::Duration k_step{2000};     // one question or one confirming check
inline constexpr util::Duration k_request{10000}; // Redis: Sentinels accepting SENTINEL FAILOVER
// Redis: the replicas Sentinel may promote reaching the paused master's replication offset.
// A linked replica trails its master by milliseconds (the stream is pushed as it is written),
// so one still short after seconds is resyncing or starved, not about to arrive; and every
// moment of the wait holds the clients' writes, so it is kept short and fails the run early.
inline constexpr util::Duration k_catch_up{5000};
// Between two looks at the replicas' offsets: short, as the wait is expected to be.
inline constexpr auto k_catch_up_poll = std::chrono::milliseconds{50};
inline constexpr auto k_unpause_budget =
    std::chrono::milliseconds{2000}; // one CLIENT UNPAUSE after a failure
// Redis, after a run stopped once FAILOVER may have been accepted: finding the master the
// Sentinel majority names, REPLICAOF on the old master, ROLE confirming it.
inline constexpr auto k_release_budget = std::chrono::milliseconds{5000};
// How long the CLIENT PAUSE outlives the deadline. The pause is set once, long enough for
// the whole run and its release, rather than kept short and renewed:
// - a renewal must fire while a step blocks (a Sentinel or the writer check may take k_step),
//   so it needs a second thread sending CLIENT PAUSE beside the main one's REPLICAOF and
//   UNPAUSE, and a renewal landing after the final UNPAUSE would hold writes again;
// - the long pause costs nothing when the run ends normally or fails (it is unpaused or
//   deliberately left paused, explicitly), and if dbcheck is killed (SIGKILL) it still ends
//   by itself at a bounded time; a renewed one would merely end sooner, as a master, which
//   is the very danger a pause is there to avoid.
inline constexpr auto k_pause_margin = std::chrono::milliseconds{10000};
static_assert(k_pause_margin >= k_release_budget + k_unpause_budget + std::chrono::seconds{2},
              "the pause must outlive the release that follows a missed deadline");

// The operator's credentials, read from their file only now (checks never read it).
struct Operator {
  std::string user;
  config::Secret password;
};

// --- Interface ---

// The operator's credentials for `user` and the password `file`, read now; nullopt when
// neither is configured.
tl::expected<std::optional<Operator>, std::string>
operator_of(const std::optional<std::string>& user, const std::optional<std::string>& file);

// A deadline for one step within `by`: k_step from now on `peers`' clock, never past `by`.
probe::Deadline step_within(probe::Peers& peers, const probe::Deadline& by);

// Tracks phases, times, progress events and interruptions, and builds the result. Holds the
// peers every step of the run reaches the nodes, the managers and the clock through.
class Driver {
public:
  Driver(const SwitchoverOptions& options, const SwitchoverProgress& progress,
         std::shared_ptr<probe::Peers> peers)
      : m_progress(progress), m_interrupt(options.interrupted), m_peers(std::move(peers)),
        m_start(m_peers->now()), m_deadline(m_start + options.timeout) {}

  // The peers (network_peers() in production).
  const std::shared_ptr<probe::Peers>& peers() const { return m_peers; }
  // The time now, on the peers' clock.
  probe::Clock::time_point now() const { return m_peers->now(); }
  // The deadline of the whole switchover.
  const probe::Deadline& deadline() const { return m_deadline; }
  // True once the whole switchover's deadline has come.
  bool expired() const { return now() >= m_deadline.at(); }
  // What is left of the whole deadline, never negative.
  probe::Clock::duration remaining() const {
    return std::max(probe::Clock::duration::zero(), m_deadline.at() - now());
  }
  // A deadline for one step: k_step from now, never past the whole one.
  probe::Deadline step() const { return step_within(*m_peers, m_deadline); }
  void begin(SwitchoverPhase phase, const std::string& waits_for) {
    m_phase = phase;
    m_phase_start = now();
    m_open = true;
    emit(false, true, waits_for);
  }
  void end(const std::string& text) {
    record();
    emit(true, true, text);
  }
  // True once something asked the run to stop (asked again on each call until then).
  bool interrupted() {
    if (!result.interrupted_by && m_interrupt) {
      result.interrupted_by = m_interrupt();
    }
    return result.interrupted_by.has_value();
  }
  // "interrupted by SIGTERM" once interrupted, else `otherwise`.
  std::string stop_reason(const std::string& otherwise) const {
    return result.interrupted_by ? "interrupted by " + *result.interrupted_by : otherwise;
  }
  SwitchoverResult fail(const std::string& error) {
    if (m_open) {
      record();
    }
    result.failed = m_phase;
    result.error = error;
    emit(true, false, error);
    return finish();
  }
  SwitchoverResult finish() {
    result.ok = !result.failed;
    result.total_s = seconds_since(m_start);
    return result;
  }
  SwitchoverResult result;

private:
  double seconds_since(probe::Clock::time_point t) const {
    return std::chrono::duration<double>(now() - t).count();
  }
  void record() {
    result.phases.push_back({m_phase, seconds_since(m_phase_start)});
    m_open = false;
  }
  void emit(bool finished, bool ok, const std::string& text) {
    if (m_progress) {
      m_progress({m_phase, finished, ok, text, seconds_since(m_start)});
    }
  }
  const SwitchoverProgress& m_progress;
  const SwitchoverInterrupt& m_interrupt;
  std::shared_ptr<probe::Peers> m_peers;
  probe::Clock::time_point m_start;
  probe::Deadline m_deadline;
  SwitchoverPhase m_phase = SwitchoverPhase::preflight;
  probe::Clock::time_point m_phase_start;
  bool m_open = false; // a phase began and has not ended
};

// How a wait ended.
enum class WaitEnd { done, expired, interrupted };

// Polls `done` every `every` until it returns true or `deadline` passes on `peers`' clock;
// with a driver, also stops as soon as the run is interrupted (looked at before each poll).
template <class Pred>
WaitEnd wait_every(probe::Peers& peers, const probe::Deadline& deadline, Driver* driver,
                   probe::Clock::duration every, Pred&& done) {
  while (true) {
    if (driver != nullptr && driver->interrupted()) {
      return WaitEnd::interrupted;
    }
    if (done()) {
      return WaitEnd::done;
    }
    const auto now = peers.now();
    if (now >= deadline.at()) {
      return WaitEnd::expired;
    }
    peers.sleep_for(std::min<probe::Clock::duration>(every, deadline.at() - now));
  }
}

// wait_every with k_poll.
template <class Pred>
WaitEnd wait_for(probe::Peers& peers, const probe::Deadline& deadline, Driver* driver,
                 Pred&& done) {
  return wait_every(peers, deadline, driver, k_poll, std::forward<Pred>(done));
}

// Both opinions on `node` as a writer of `cluster` (the check dbcheck runs for HAProxy),
// asked through `peers`.
core::Report writer_check(const std::shared_ptr<probe::Peers>& peers,
                          const config::Cluster& cluster, const util::HostPort& node,
                          const probe::Deadline& within);

// Whole seconds in `d`, rounded up, never negative.
long long whole_seconds(probe::Clock::duration d);

// Why an address cannot be used here, or empty. Sentinels and --to must be IP literals: the
// Sentinel FAILOVER goes to must be the very one that was counted naming the master a moment
// before, and a name may resolve elsewhere between the two connections; Sentinel itself
// reports addresses as IPs.
std::string not_an_ip(const util::HostPort& addr, const std::string& what);

} // namespace dbcheck::switchover
