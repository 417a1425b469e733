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

// An http:// URL whose host is an IP address literal: all a plain HTTP/1.1 client needs to
// reach it without a resolver, TLS or credentials.
struct PlainHttpTarget {
  std::string address;     // "10.0.0.1" or "::1" (no brackets)
  int port = 80;           // 1..65535
  std::string host_header; // "10.0.0.1:8008" or "[::1]:8008", as the Host header carries it
  std::string target;      // "/cluster?x=1": the path and query, "/" when empty; no fragment
};

// `url` as a PlainHttpTarget when it is http:// (any case) to an IPv4 or bracketed IPv6
// literal (no zone), with an optional port and no credentials, and holds only printable ASCII
// (no space, control byte or NUL); nullopt for anything else (https, a host name, "user@"),
// which needs a full client.
std::optional<PlainHttpTarget> plain_http_target(const std::string& url);

} // namespace dbcheck::util
