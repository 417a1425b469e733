#pragma once
// URLs as shown to people: never with credentials.

#include <optional>
#include <string>

namespace dbcheck::util {

// --- Interface ---

// `url` with anything between "://" and the last '@' replaced by "***" (user, password, even a
// password holding '/', '#' or '?'); unchanged when it has no '@' after the scheme.
std::string redact_url(const std::string& url);

// Where an http(s) URL points: "scheme://host:port", lower-cased, the default port (80, 443)
// written out, credentials and path dropped; nullopt for anything else. Two URLs reach the
// same server when their origins are equal.
std::optional<std::string> url_origin(const std::string& url);

} // namespace dbcheck::util
