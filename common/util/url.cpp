#include "url.hpp"

#include <algorithm>
#include <cctype>

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

} // namespace dbcheck::util
