#pragma once
// URLs as shown to people: never with credentials.

#include <string>

namespace dbcheck::util {

// --- Interface ---

// `url` with anything between "://" and the last '@' replaced by "***" (user, password, even a
// password holding '/', '#' or '?'); unchanged when it has no '@' after the scheme.
std::string redact_url(const std::string& url);

} // namespace dbcheck::util
