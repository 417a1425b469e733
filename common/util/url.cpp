#include "url.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace dbcheck::util {

std::string redact_url(const std::string& url) {
  const auto scheme = url.find("://");
  const auto start = scheme == std::string::npos ? 0 : scheme + 3;
  const auto at = url.rfind('@');
  if (at == std::string::npos || at < start) {
    return url;
  }
  // Over-eager on purpose: a path with '@' loses its start, but a password never shows.
  return url.substr(0, start) + "***@" + url.substr(at + 1);
}

std::optional<std::string> url_origin(const std::string& url) {
  std::string lower = url;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string scheme;
  if (lower.rfind("http://", 0) == 0) {
    scheme = "http";
  } else if (lower.rfind("https://", 0) == 0) {
    scheme = "https";
  } else {
    return std::nullopt;
  }
  std::string authority = lower.substr(scheme.size() + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (const auto at = authority.rfind('@'); at != std::string::npos) {
    authority = authority.substr(at + 1);
  }
  // A port follows the last ':' unless that ':' is inside an IPv6 literal's brackets.
  const auto colon = authority.rfind(':');
  const bool has_port = colon != std::string::npos &&
                        (authority.find(']') == std::string::npos || colon > authority.find(']'));
  if (authority.empty() || (has_port && colon + 1 == authority.size())) {
    return std::nullopt;
  }
  if (!has_port) {
    authority += scheme == "http" ? ":80" : ":443";
  }
  return scheme + "://" + authority;
}

std::optional<PlainHttpTarget> plain_http_target(const std::string& url) {
  constexpr std::string_view scheme = "http://";
  if (url.size() < scheme.size() ||
      !std::equal(scheme.begin(), scheme.end(), url.begin(), [](char a, char b) {
        return a == std::tolower(static_cast<unsigned char>(b));
      })) {
    return std::nullopt;
  }
  // Nothing outside printable ASCII anywhere: a NUL would cut the address short for inet_pton,
  // a space or line break would split the request line.
  if (std::any_of(url.begin(), url.end(), [](unsigned char c) { return c <= 0x20 || c >= 0x7f; })) {
    return std::nullopt;
  }
  const std::string rest = url.substr(scheme.size());
  const auto path_at = rest.find_first_of("/?#");
  const std::string authority = rest.substr(0, path_at);
  std::string target = path_at == std::string::npos ? "" : rest.substr(path_at);
  target = target.substr(0, target.find('#')); // a fragment is never sent
  if (target.empty() || target.front() == '?') {
    target.insert(0, "/");
  }
  PlainHttpTarget t;
  t.target = target;
  std::string port;
  std::array<unsigned char, 16> raw{};
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos) {
      return std::nullopt;
    }
    t.address = authority.substr(1, close - 1);
    if (inet_pton(AF_INET6, t.address.c_str(), raw.data()) != 1) {
      return std::nullopt; // a zone ("%eth0") or not an address
    }
    const std::string after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') {
      return std::nullopt;
    }
    port = after.empty() ? "" : after.substr(1);
  } else {
    const auto colon = authority.find(':');
    t.address = authority.substr(0, colon);
    // inet_pton, not inet_aton: only the dotted quad, never "10.1" or "0x0a000001".
    if (inet_pton(AF_INET, t.address.c_str(), raw.data()) != 1) {
      return std::nullopt; // a host name, credentials ('@'), or nothing
    }
    port = colon == std::string::npos ? "" : authority.substr(colon + 1);
  }
  if (!port.empty()) {
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(),
                                        [](unsigned char c) { return std::isdigit(c) != 0; })) {
      return std::nullopt;
    }
    t.port = std::stoi(port);
    if (t.port < 1 || t.port > 65535) {
      return std::nullopt;
    }
  }
  const bool v6 = t.address.find(':') != std::string::npos;
  t.host_header = (v6 ? "[" + t.address + "]" : t.address) + ":" + std::to_string(t.port);
  return t;
}

} // namespace dbcheck::util
