#pragma once
// The writer rule shared by every engine: two opinions, both must agree; either one saying
// "not this node" wins at once.

#include "probe_error.hpp"
#include "verdict.hpp"

#include <string>
#include <string_view>

namespace dbcheck::core {

// What to do with a writer the manager names that refuses new connections (it is full).
enum class SaturationPolicy {
  up,  // keep it, if its role is still known: ejecting the sole writer turns overload into a
       // full outage
  down // eject it
};

// One opinion about a node, reduced to: does it agree, what it said, how it failed if not.
struct Opinion {
  bool ok = false;
  std::string text;             // for the reason line: "Patroni names this node (pg1) leader"
  Failure kind = Failure::none; // saturated: alive but full; role: a definite "not the primary"
  // Manager only: the manager also read the node's own role first-hand, over its own link
  // (Patroni's GET /patroni on the node; Sentinels' recent INFO), so a node that refuses the
  // check's connection is still known to be the primary.
  bool vouches_for_node = false;
  // Node only, with kind saturated: the node answered the writer query anyway (a kept
  // connection) and is a read-write primary, only full.
  bool role_known = false;
  // Manager only: whom its view names the writer.
  Named named = Named::unknown;
};

// --- Interface ---

// The writer verdict from the manager's and the node's opinions:
// - either opinion of kind `role` (a definite "not this node") makes it down/role, whatever
//   the other's state, so damping never keeps an old primary in the write pool;
// - up only when both agree;
// - a full node the manager names follows `saturation`, and `up` holds only while the node's
//   role is known (its own answer over a kept connection, or the manager's first-hand
//   report): saturation never makes a one-opinion pass;
// - otherwise down, reporting the node's failure class first (the more actionable one).
// The reason's first words follow the failure class: "not the writer: " and the opinion that
// says "not this node" (the manager's first when both do) only for role; "saturated: " for a
// full node the manager names; otherwise the failed opinion's own words (describe_failure),
// then the other opinion.
// The verdict's `named` is the manager opinion's, whatever the state.
// What asking `subject` ("PostgreSQL", "Patroni", "Redis", "Sentinels") for its opinion ran
// into, led by words chosen by the failure class, never "not the writer" (a node that cannot
// be asked has said nothing about its role): "cannot log in to PostgreSQL: 28P01: ...",
// "Redis refused the check's commands: MISCONF ...", "Patroni timed out: ...".
std::string describe_failure(std::string_view subject, const ProbeError& error);

Verdict combine_writer_opinions(const Opinion& manager, const Opinion& node,
                                SaturationPolicy saturation);

} // namespace dbcheck::core
