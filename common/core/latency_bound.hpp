#pragma once
// The latency bound (a backend's max_latency): a node that answered, but slower than allowed.
// A reader that slow leaves, since its reads can go to another; a writer keeps its state and is
// reported degraded, since there is usually no other writer and taking the only one out would
// turn slowness into an outage. A verdict already down keeps its own failure class.

#include "report.hpp"
#include "verdict.hpp"

#include <optional>

namespace dbcheck::core {

// What the bound judges, from one check.
struct LatencyObservation {
  bool reader = false;           // a replica backend's check; false: a writer's
  std::optional<double> node_ms; // the node's own answer time; nullopt: it gave no opinion
  std::optional<double> max_ms;  // the backend's max_latency; nullopt: no bound
};

// --- Interface ---

// `v` after the bound: unchanged unless the bound is set, the node answered in more than
// max_ms, and `v` is up; then a reader goes down and a writer stays up, both with failure slow
// and a reason that leads with the two times and keeps `v`'s own after them.
Verdict bound_latency(const Verdict& v, const LatencyObservation& o);

// The node's own answer time in `r`: the latency_ms of its "node" step, when the node gave its
// opinion (Report::node_answered); nullopt otherwise.
std::optional<double> node_answer_ms(const Report& r);

} // namespace dbcheck::core
