#pragma once
// A network endpoint as HAProxy and operators write it: "10.0.0.1:5432", "[::1]:5432".

#include <tl/expected.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace dbcheck::util {

// A host (IP literal or name) and a TCP port.
struct HostPort {
  std::string host; // an IP literal or a name, without brackets
  std::uint16_t port = 0;

  friend bool operator==(const HostPort&, const HostPort&) = default;
};

// --- Interface ---

// Parses "HOST:PORT" or "[V6]:PORT". Returns an error text naming the input when malformed.
tl::expected<HostPort, std::string> parse_host_port(std::string_view text);

// Parses a port number 1..65535; returns an error text naming the input otherwise.
tl::expected<std::uint16_t, std::string> parse_port(std::string_view text);

// Formats as "host:port", bracketing IPv6 literals.
std::string to_string(const HostPort& hp);

// True when `host` is a numeric IPv4 or IPv6 address (no DNS needed to reach it).
bool is_ip_literal(std::string_view host);

// Why `name` cannot be the name a certificate is verified against, or "" when it can: an IP
// literal, or a DNS name of letters, digits and hyphens in dot-separated labels of 1 to 63
// characters, at most 253 in all. A wildcard, a port, brackets or a NUL are named as such.
std::string server_name_problem(std::string_view name);

// True when both denote the same address and port: IP literals compared as addresses (IPv6
// spellings normalised), names compared whole and case-insensitively.
bool same_endpoint(const HostPort& a, const HostPort& b);

} // namespace dbcheck::util
