#pragma once
// Address ranges for an allow list: "10.0.0.0/24", "2001:db8::/32", or one address alone.

#include <tl/expected.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

struct sockaddr; // <sys/socket.h>, kept out of this header

namespace dbcheck::util {

// One range: the network's bytes (4 for IPv4, 16 for IPv6) and how many leading bits count.
struct Cidr {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{}; // the first 4 only, for IPv4
  int prefix = 0;                       // 0..32 or 0..128
};

// --- Interface ---

// Parses "ADDR/BITS" or a bare address (all bits). An error names the input; host bits set
// below the prefix ("10.0.0.1/24") are an error, since they usually mean a typo.
tl::expected<Cidr, std::string> parse_cidr(std::string_view text);

// Formats as "10.0.0.0/24", "::1/128".
std::string to_string(const Cidr& c);

// True when the peer address `addr` (AF_INET or AF_INET6; an IPv4-mapped IPv6 address counts as
// its IPv4 address) lies in one of `allow`. Any other family is not allowed.
bool address_allowed(const std::vector<Cidr>& allow, const sockaddr* addr);

} // namespace dbcheck::util
