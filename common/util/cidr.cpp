#include "cidr.hpp"

#include "format.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <charconv>
#include <cstring>

namespace dbcheck::util {
namespace {

// True when the first `prefix` bits of `a` and `b` are equal.
bool same_prefix(const std::uint8_t* a, const std::uint8_t* b, int prefix) {
  const int whole = prefix / 8;
  if (std::memcmp(a, b, static_cast<std::size_t>(whole)) != 0) {
    return false;
  }
  const int rest = prefix % 8;
  if (rest == 0) {
    return true;
  }
  const auto mask = static_cast<std::uint8_t>(0xFF << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

} // namespace

tl::expected<Cidr, std::string> parse_cidr(std::string_view text) {
  const auto slash = text.find('/');
  const std::string addr{text.substr(0, slash)};
  Cidr c;
  if (inet_pton(AF_INET, addr.c_str(), c.bytes.data()) == 1) {
    c.v6 = false;
  } else if (inet_pton(AF_INET6, addr.c_str(), c.bytes.data()) == 1) {
    c.v6 = true;
  } else {
    return tl::make_unexpected(util::format(
        "\"{}\": expected an IP address or ADDRESS/BITS (e.g. \"10.0.0.0/24\")", text));
  }
  const int max = c.v6 ? 128 : 32;
  c.prefix = max;
  if (slash != std::string_view::npos) {
    const auto bits = text.substr(slash + 1);
    int n = -1;
    const auto [end, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), n);
    if (ec != std::errc{} || end != bits.data() + bits.size() || n < 0 || n > max) {
      return tl::make_unexpected(
          util::format("\"{}\": the prefix length must be a number from 0 to {}", text, max));
    }
    c.prefix = n;
  }
  Cidr network = c;
  const int len = c.v6 ? 16 : 4;
  for (int bit = c.prefix; bit < len * 8; ++bit) {
    network.bytes[static_cast<std::size_t>(bit / 8)] &=
        static_cast<std::uint8_t>(~(0x80 >> (bit % 8)));
  }
  if (network.bytes != c.bytes) {
    return tl::make_unexpected(
        util::format("\"{}\": host bits are set below /{} (did you mean {}?)", text, c.prefix,
                     to_string(network)));
  }
  return c;
}

std::string to_string(const Cidr& c) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(c.v6 ? AF_INET6 : AF_INET, c.bytes.data(), buf, sizeof buf);
  return util::format("{}/{}", buf, c.prefix);
}

bool address_allowed(const std::vector<Cidr>& allow, const sockaddr* addr) {
  if (addr == nullptr) {
    return false;
  }
  std::uint8_t bytes[16] = {};
  bool v6 = false;
  if (addr->sa_family == AF_INET) {
    std::memcpy(bytes, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, 4);
  } else if (addr->sa_family == AF_INET6) {
    const auto& a6 = reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a6)) {
      // A dual-stack socket shows IPv4 clients as ::ffff:a.b.c.d: match them as IPv4.
      std::memcpy(bytes, a6.s6_addr + 12, 4);
    } else {
      std::memcpy(bytes, a6.s6_addr, 16);
      v6 = true;
    }
  } else {
    return false;
  }
  for (const Cidr& c : allow) {
    if (c.v6 == v6 && same_prefix(bytes, c.bytes.data(), c.prefix)) {
      return true;
    }
  }
  return false;
}

} // namespace dbcheck::util
