#include "latency_bound.hpp"

#include <util/format.hpp>

#include <cmath>

namespace dbcheck::core {
namespace {

// Whole milliseconds, unless rounding would print the bound itself for a time just past it.
std::string ms_words(double ms, double bound) {
  return std::round(ms) <= bound ? util::format("{:.1f} ms", ms) : util::format("{:.0f} ms", ms);
}

} // namespace

Verdict bound_latency(const Verdict& v, const LatencyObservation& o) {
  if (!o.max_ms || !o.node_ms || *o.node_ms <= *o.max_ms || v.state != State::up) {
    return v;
  }
  Verdict out = v;
  out.failure = Failure::slow;
  out.reason = util::format("slow: the node answered in {}, max_latency {:.0f} ms{}",
                            ms_words(*o.node_ms, *o.max_ms), *o.max_ms,
                            v.reason.empty() ? "" : util::format(" ({})", v.reason));
  if (o.reader) {
    out.state = State::down;
  }
  return out;
}

std::optional<double> node_answer_ms(const Report& r) {
  if (!r.node_answered) {
    return std::nullopt;
  }
  for (auto it = r.steps.rbegin(); it != r.steps.rend(); ++it) {
    if (it->opinion == "node") {
      return it->latency_ms;
    }
  }
  return std::nullopt;
}

} // namespace dbcheck::core
