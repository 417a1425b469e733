#pragma once
// How Patroni's member tags read: Patroni takes a tag for set by Python's truth value of what its
// configuration holds (`bool(tags.get('noloadbalance'))` in 3.0.2 and 4.x), and GET /cluster and
// the status documents pass the value on as configured. Read the same way, a node Patroni's own
// checks leave out (a quoted "false" is set for Patroni) is never let in here.

#include <nlohmann/json.hpp>

namespace dbcheck::core {

// --- Interface ---

// Python's truth value of a tag: false for false, null, zero, and an empty string, list or
// object; true for anything else.
bool truthy_tag(const nlohmann::json& v);

} // namespace dbcheck::core
