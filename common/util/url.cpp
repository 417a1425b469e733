#include "url.hpp"

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

} // namespace dbcheck::util
