#include "host_port.hpp"

#include "format.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace dbcheck::util {

tl::expected<std::uint16_t, std::string> parse_port(std::string_view text) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value == 0 ||
      value > 65535) {
    return tl::make_unexpected(util::format("\"{}\" is not a port number (1-65535)", text));
  }
  return static_cast<std::uint16_t>(value);
}

tl::expected<HostPort, std::string> parse_host_port(std::string_view text) {
  const auto bad = [&] {
    return tl::make_unexpected(
        util::format("\"{}\" is not HOST:PORT (e.g. 10.0.0.1:5432 or [::1]:5432)", text));
  };
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return bad();
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      return bad();
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) {
    return bad();
  }
  auto p = parse_port(port);
  if (!p) {
    return bad();
  }
  return HostPort{std::string{host}, *p};
}

std::string to_string(const HostPort& hp) {
  if (hp.host.find(':') != std::string::npos) {
    return util::format("[{}]:{}", hp.host, hp.port);
  }
  return util::format("{}:{}", hp.host, hp.port);
}

bool is_ip_literal(std::string_view host) {
  const std::string h{host};
  std::array<unsigned char, 16> buf{};
  return inet_pton(AF_INET, h.c_str(), buf.data()) == 1 ||
         inet_pton(AF_INET6, h.c_str(), buf.data()) == 1;
}

std::string server_name_problem(std::string_view name) {
  if (name.find('\0') != std::string_view::npos) {
    return "a NUL character cannot be part of a name";
  }
  if (is_ip_literal(name)) {
    return "";
  }
  if (name.find('*') != std::string_view::npos) {
    return "a wildcard is what a certificate carries, not what dbcheck checks: give one node's "
           "name";
  }
  if (name.find(':') != std::string_view::npos || name.find('[') != std::string_view::npos) {
    return "a name or an address alone, without a port or brackets";
  }
  if (name.empty() || name.size() > 253 || name.front() == '.' || name.back() == '.') {
    return "a DNS name of at most 253 characters, not starting or ending with a dot";
  }
  std::size_t label = 0;
  for (const char ch : name) {
    const bool ldh = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || ch == '-';
    if (ch == '.') {
      if (label == 0) {
        return "an empty label (two dots in a row)";
      }
      label = 0;
    } else if (!ldh) {
      return "letters, digits, hyphens and dots only";
    } else if (++label > 63) {
      return "a label longer than 63 characters";
    }
  }
  return "";
}

bool same_endpoint(const HostPort& a, const HostPort& b) {
  if (a.port != b.port) {
    return false;
  }
  std::array<unsigned char, 16> ba{};
  std::array<unsigned char, 16> bb{};
  if (inet_pton(AF_INET6, a.host.c_str(), ba.data()) == 1 &&
      inet_pton(AF_INET6, b.host.c_str(), bb.data()) == 1) {
    return ba == bb;
  }
  std::array<unsigned char, 4> a4{};
  std::array<unsigned char, 4> b4{};
  if (inet_pton(AF_INET, a.host.c_str(), a4.data()) == 1 &&
      inet_pton(AF_INET, b.host.c_str(), b4.data()) == 1) {
    return a4 == b4;
  }
  // Host names are case-insensitive (DNS); never a prefix or substring match.
  return a.host.size() == b.host.size() &&
         std::equal(a.host.begin(), a.host.end(), b.host.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

} // namespace dbcheck::util
