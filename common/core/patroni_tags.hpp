#pragma once
// How Patroni's member tags read: its YAML lets `noloadbalance: true`, `"yes"` or `1` mean the
// same, and GET /cluster and the status documents pass them on as written.

#include <nlohmann/json.hpp>

namespace dbcheck::core {

// --- Interface ---

// True for a tag set on: true, a non-zero integer, or "true", "yes", "on", "1" in any case.
bool truthy_tag(const nlohmann::json& v);

} // namespace dbcheck::core
