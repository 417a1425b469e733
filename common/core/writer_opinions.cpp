#include "writer_opinions.hpp"

#include <fmt/format.h>

namespace dbcheck::core {

Verdict combine_writer_opinions(const Opinion& manager, const Opinion& node,
                                SaturationPolicy saturation) {
  if (node.kind == Failure::saturated) {
    const std::string what = fmt::format("saturated: {}; {}", manager.text, node.text);
    if (!manager.ok) {
      // Not the writer whatever its load: the manager's failure is the one to report.
      return {State::down, manager.kind == Failure::none ? Failure::role : manager.kind, what};
    }
    if (saturation == SaturationPolicy::up) {
      return {State::up, Failure::saturated,
              fmt::format("{}; on_saturation=up keeps the sole writer in rotation", what)};
    }
    return {State::down, Failure::saturated, fmt::format("{}; on_saturation=down", what)};
  }
  if (manager.ok && node.ok) {
    return {State::up, Failure::none, fmt::format("{}; {}", manager.text, node.text)};
  }
  Failure kind = Failure::role;
  if (!node.ok && node.kind != Failure::role) {
    kind = node.kind;
  } else if (!manager.ok && manager.kind != Failure::role) {
    kind = manager.kind;
  }
  return {State::down, kind, fmt::format("not the writer: {}; {}", manager.text, node.text)};
}

} // namespace dbcheck::core
