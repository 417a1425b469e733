#pragma once
// A planned switchover that loses no acknowledged write: the manager moves the primary, and
// the move is over only when both opinions (manager and node) agree on the new one.
//
// Redis/Valkey: CLIENT PAUSE WRITE on the master (writes are held, not refused, so it
// acknowledges nothing more) for the whole deadline plus a margin, SENTINEL FAILOVER to a
// Sentinel of the majority that names the master, wait for a Sentinel majority and the node
// to agree on the new master, make the old master its replica (REPLICAOF), then CLIENT
// UNPAUSE it (held writes then meet a replica and fail: the client retries them through
// HAProxy on the new master). Once FAILOVER may have been accepted, the old master is
// unpaused only as a replica of the master the Sentinel majority names; else it is left
// paused and the result says what the operator must do. PostgreSQL: Patroni's POST
// /switchover, then wait until the two opinions agree on the new leader.

#include <config/config.hpp>
#include <probe/deadline.hpp>
#include <util/duration.hpp>
#include <util/host_port.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dbcheck::probe {
class Peers;
} // namespace dbcheck::probe

namespace dbcheck::switchover {

using probe::Clock;
using probe::Deadline;

// The steps of a switchover, in order; a failure names the one it happened in.
enum class SwitchoverPhase { preflight, pause, request, confirm, demote, unpause };

// Asked between steps and while waiting: what asked the run to stop (e.g. "SIGTERM"), or
// nullopt. Called from the thread that runs the switchover only.
using SwitchoverInterrupt = std::function<std::optional<std::string>()>;

// What the caller asked for.
struct SwitchoverOptions {
  std::optional<util::HostPort> to; // the node to promote; none: the manager chooses
  bool dry_run = false;             // check and print the plan, change nothing
  util::Duration timeout{60000};    // the whole switchover
  // Redis: CLIENT PAUSE's own limit; none: what is left of `timeout` plus the margin. Never
  // shorter than minimum_pause(timeout) (refused in preflight).
  std::optional<util::Duration> pause;
  SwitchoverInterrupt interrupted; // none: the run is never interrupted
};

// Progress: a phase began (`finished` false, `text` what it waits for) or ended.
struct SwitchoverEvent {
  SwitchoverPhase phase = SwitchoverPhase::preflight;
  bool finished = false;
  bool ok = true;
  std::string text;
  double elapsed_s = 0; // since the switchover started
};

// How long one phase took.
struct PhaseTime {
  SwitchoverPhase phase = SwitchoverPhase::preflight;
  double seconds = 0;
};

// The outcome: success, or the phase that failed and why; the plan and the phases' times.
struct SwitchoverResult {
  bool ok = false;
  std::optional<SwitchoverPhase> failed;
  std::string error;
  std::string old_primary; // host:port
  std::string new_primary; // host:port, once known
  std::vector<std::string> plan;
  std::vector<PhaseTime> phases;
  double total_s = 0;
  std::optional<std::string> interrupted_by; // what stopped the run (SwitchoverInterrupt)
  // Redis: the old master was left paused on purpose (unpausing it could make a second
  // writable master); `advice` says what the operator must do, and by when.
  bool left_paused = false;
  std::string advice; // what the operator must do now; empty when nothing
};

// Receives every progress event as it happens.
using SwitchoverProgress = std::function<void(const SwitchoverEvent&)>;

// --- Interface ---

// "preflight", "pause", "request", "confirm", "demote", "unpause".
std::string_view to_string(SwitchoverPhase phase);

// The shortest Redis pause accepted for a switchover bounded by `timeout`: all of it plus
// the margin in which a run that missed its deadline releases the old master.
util::Duration minimum_pause(util::Duration timeout);

// Why `pause` cannot hold writes for a switchover bounded by `timeout` (shorter than
// minimum_pause), with what to give instead; nullopt when it can.
std::optional<std::string> pause_refused(util::Duration pause, util::Duration timeout);

// Runs (or with dry_run, plans) a switchover of `cluster`, reporting through `progress`.
// Every wait is bounded by options.timeout from the start (the release after a failure by a
// few seconds more). Redis: on a failure or an interruption after the pause, the old master
// is unpaused while FAILOVER was not sent; after, only once it is a replica of the master the
// Sentinel majority names, else it is left paused (left_paused, advice). PostgreSQL: an
// interruption stops the waiting and reports the state; Patroni's switchover is never
// undone. Never throws.
SwitchoverResult run_switchover(const config::Cluster& cluster, const SwitchoverOptions& options,
                                const SwitchoverProgress& progress);

// run_switchover() with every node, manager and the clock reached through `peers` (the one
// above passes probe::network_peers(nullptr); unit tests pass fakes).
SwitchoverResult run_switchover(const config::Cluster& cluster, const SwitchoverOptions& options,
                                const SwitchoverProgress& progress,
                                std::shared_ptr<probe::Peers> peers);

} // namespace dbcheck::switchover
