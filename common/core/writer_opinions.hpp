#pragma once
// The writer rule shared by every engine: two opinions, both must agree.

#include "verdict.hpp"

#include <string>

namespace dbcheck::core {

// What to do with a writer the manager names that refuses new connections (it is full).
enum class SaturationPolicy {
  up,  // keep it: ejecting the sole writer turns overload into a full outage (seed 000)
  down // eject it
};

// One opinion about a node, reduced to: does it agree, what it said, how it failed if not.
struct Opinion {
  bool ok = false;
  std::string text;             // for the reason line: "Patroni names this node (pg1) leader"
  Failure kind = Failure::none; // saturated: alive but full; role: a definite "not the primary"
};

// --- Interface ---

// The writer verdict from the manager's and the node's opinions: up only when both agree;
// a full node follows `saturation` when the manager agrees; otherwise down, naming both
// opinions and reporting the node's own failure class first (the more actionable one).
Verdict combine_writer_opinions(const Opinion& manager, const Opinion& node,
                                SaturationPolicy saturation);

} // namespace dbcheck::core
