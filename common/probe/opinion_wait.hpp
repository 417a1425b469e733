#pragma once
// Waiting for an opinion asked on another thread: never past the deadline, and a step that
// overran is reported as a timeout that names it. The one place this policy lives; the
// protocol checks only ask.

#include "async.hpp"
#include "deadline.hpp"

#include <core/probe_error.hpp>
#include <util/format.hpp>

#include <future>
#include <optional>
#include <string_view>

namespace dbcheck::probe {

// --- Interface ---

// The failure recorded for a step that did not finish by the deadline; `what` names it ("the
// Patroni query").
inline core::ProbeError not_finished(std::string_view what) {
  return core::ProbeError{core::Failure::timeout,
                          util::format("timeout: {} did not finish by the deadline", what), ""};
}

// The step's result when it finished by `deadline` (plus k_grace, for a step that honours the
// deadline itself), else nullopt: the step is abandoned, never waited for.
template <class T>
std::optional<T> await_by(std::future<T>& step, const Deadline& deadline) {
  if (step.wait_until(deadline.at() + k_grace) != std::future_status::ready) {
    return std::nullopt;
  }
  return step.get();
}

} // namespace dbcheck::probe
