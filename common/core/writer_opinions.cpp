#include "writer_opinions.hpp"

#include <fmt/format.h>

namespace dbcheck::core {
namespace {

Verdict combine(const Opinion& manager, const Opinion& node, SaturationPolicy saturation) {
  const std::string both = fmt::format("{}; {}", manager.text, node.text);
  if ((!manager.ok && manager.kind == Failure::role) || (!node.ok && node.kind == Failure::role)) {
    return {State::down, Failure::role, fmt::format("not the writer: {}", both)};
  }
  if (node.kind == Failure::saturated) {
    const std::string what = fmt::format("saturated: {}", both);
    if (!manager.ok) {
      // Not the writer whatever its load: the manager's failure is the one to report.
      return {State::down, manager.kind == Failure::none ? Failure::role : manager.kind, what};
    }
    if (saturation == SaturationPolicy::down) {
      return {State::down, Failure::saturated, fmt::format("{}; on_saturation=down", what)};
    }
    if (node.role_known || manager.vouches_for_node) {
      return {State::up, Failure::saturated,
              fmt::format("{}; on_saturation=up keeps the sole writer in rotation", what)};
    }
    return {State::down, Failure::saturated,
            fmt::format("{}; on_saturation=up needs the node's own role, and neither the node "
                        "nor the manager reported it",
                        what)};
  }
  if (manager.ok && node.ok) {
    return {State::up, Failure::none, both};
  }
  Failure kind = Failure::role;
  if (!node.ok) {
    kind = node.kind;
  } else if (!manager.ok) {
    kind = manager.kind;
  }
  if (kind == Failure::none) {
    kind = Failure::role; // an opinion that disagrees without saying how
  }
  return {State::down, kind, fmt::format("not the writer: {}", both)};
}

} // namespace

Verdict combine_writer_opinions(const Opinion& manager, const Opinion& node,
                                SaturationPolicy saturation) {
  Verdict v = combine(manager, node, saturation);
  v.named = manager.named;
  return v;
}

} // namespace dbcheck::core
