#pragma once
// The decision every check ends in: a state HAProxy understands, a failure class, and a reason.

#include <string>
#include <string_view>

namespace dbcheck::core {

// HAProxy's agent words; the external check maps up to exit 0 and everything else to exit 1.
enum class State { up, down, drain, maint };

// Why a verdict is not plainly "up"; none for an unqualified pass.
enum class Failure {
  none,       // both opinions agree, nothing to report
  network,    // refused, reset, unreachable
  timeout,    // the deadline passed before an answer
  protocol,   // an answer that could not be understood (garbage JSON, non-200, bad rows)
  auth,       // password or pg_hba rejection: a configuration problem on one side
  not_ready,  // starting up, shutting down, not consistent, no WAL receiver
  saturated,  // alive but refusing new connections (53300)
  unwritable, // a writer that refuses writes: disk full, MISCONF, OOM, NOREPLICAS
  slow,       // answered, but slower than the backend's max_latency
  identity,   // not the node the manager means: another cluster, or a master restarted empty
  role,       // the node or the manager says it is the wrong role for this backend
  lag,        // a replica too far behind, or its lag cannot be bounded
  policy,     // excluded on purpose (e.g. Patroni's noloadbalance tag)
  config,     // dbcheck's own configuration is unusable
  internal,   // dbcheck itself could not run the check (no thread, no memory): fail closed
};

// Whom the manager named the writer in one writer check.
enum class Named {
  unknown,    // not read, or an engine that does not tell (Sentinel: it promotes, then names)
  this_node,  // more than half of the configured Patroni members name this node leader
  nobody,     // more than half of them name no leader: the key expired or was released
  another,    // the manager names another node
  no_primary, // the DCS unread, every member's Patroni answers that it runs no primary: this
              // node was demoted (or never led), and no one else leads
};

// A check's outcome: what HAProxy should do with the node, and why.
struct Verdict {
  State state = State::down;
  Failure failure = Failure::none;
  std::string reason; // one line, for a tired operator: what was asked, what failed, why
  // Writers: whom the manager's agreed view named the writer (HealthTracker's rise rule).
  Named named = Named::unknown;
};

// --- Interface ---

// "up", "down", "drain", "maint".
std::string_view to_string(State s);

// "UP", "DOWN", "DRAIN", "MAINT": the state as one-line reports and logs show it.
std::string_view to_label(State s);

// "none", "network", "timeout", ...; stable names used in JSON, logs and metrics.
std::string_view to_string(Failure f);

// True for a verdict that lets HAProxy send traffic (up).
bool passes(const Verdict& v);

} // namespace dbcheck::core
