#include "writer_opinions.hpp"

#include <util/format.hpp>

namespace dbcheck::core {
namespace {

// The first words for `error`, by its class: what went wrong asking `subject`.
std::string headline(std::string_view subject, const ProbeError& error) {
  switch (error.kind) {
  case Failure::network:
    return util::format("cannot reach {}", subject);
  case Failure::timeout:
    return util::format("{} timed out", subject);
  case Failure::protocol:
    // An error code means the peer understood and said no; without one, it said nonsense.
    return error.code.empty() ? util::format("unusable answer from {}", subject)
                              : util::format("{} refused the check's commands", subject);
  case Failure::auth:
    return util::format("cannot log in to {}", subject);
  case Failure::not_ready:
    return util::format("{} not ready", subject);
  case Failure::saturated:
    return util::format("{} full", subject);
  case Failure::unwritable:
    return util::format("{} refuses writes", subject);
  case Failure::slow:
    return util::format("{} too slow", subject);
  case Failure::identity:
    return util::format("{} is not the node the manager means", subject);
  case Failure::config:
    return util::format("cannot check {} as configured", subject);
  case Failure::internal:
    return util::format("dbcheck could not ask {}", subject);
  case Failure::none:
  case Failure::role:
  case Failure::lag:
  case Failure::policy:
    break;
  }
  return std::string{subject};
}

// The probes lead a timeout's detail with "timeout: ", which the headline already says.
std::string_view without_timeout_word(const ProbeError& error) {
  std::string_view detail = error.detail;
  constexpr std::string_view k_word = "timeout: ";
  if (error.kind == Failure::timeout && detail.substr(0, k_word.size()) == k_word) {
    detail.remove_prefix(k_word.size());
  }
  return detail;
}

// The deciding opinion first, then the other.
std::string both(const Opinion& first, const Opinion& second) {
  return util::format("{}; {}", first.text, second.text);
}

Verdict combine(const Opinion& manager, const Opinion& node, SaturationPolicy saturation) {
  const bool manager_says_not = !manager.ok && manager.kind == Failure::role;
  const bool node_says_not = !node.ok && node.kind == Failure::role;
  if (manager_says_not || node_says_not) {
    return {State::down, Failure::role,
            util::format("not the writer: {}",
                         manager_says_not ? both(manager, node) : both(node, manager))};
  }
  if (node.kind == Failure::saturated) {
    if (!manager.ok) {
      // Not the writer whatever its load: the manager's failure is the one to report.
      const Failure kind = manager.kind == Failure::none ? Failure::role : manager.kind;
      return {State::down, kind,
              util::format("{}{}", kind == Failure::role ? "not the writer: " : "",
                           both(manager, node))};
    }
    const std::string what = util::format("saturated: {}", both(manager, node));
    if (saturation == SaturationPolicy::down) {
      return {State::down, Failure::saturated, util::format("{}; on_saturation=down", what)};
    }
    if (node.role_known || manager.vouches_for_node) {
      return {State::up, Failure::saturated,
              util::format("{}; on_saturation=up keeps the sole writer in rotation", what)};
    }
    return {State::down, Failure::saturated,
            util::format("{}; on_saturation=up needs the node's own role, and neither the node "
                         "nor the manager reported it",
                         what)};
  }
  if (manager.ok && node.ok) {
    return {State::up, Failure::none, both(manager, node)};
  }
  const bool node_failed = !node.ok;
  const Failure kind = node_failed ? node.kind : manager.kind;
  const std::string reason = node_failed ? both(node, manager) : both(manager, node);
  if (kind == Failure::none) {
    // An opinion that disagrees without saying how.
    return {State::down, Failure::role, util::format("not the writer: {}", reason)};
  }
  return {State::down, kind, reason};
}

} // namespace

std::string describe_failure(std::string_view subject, const ProbeError& error) {
  return util::format("{}: {}", headline(subject, error), without_timeout_word(error));
}

Verdict combine_writer_opinions(const Opinion& manager, const Opinion& node,
                                SaturationPolicy saturation) {
  Verdict v = combine(manager, node, saturation);
  v.named = manager.named;
  return v;
}

} // namespace dbcheck::core
