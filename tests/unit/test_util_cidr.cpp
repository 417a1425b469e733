#include "dbcheck_catch.hpp"

#include <util/cidr.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>

using namespace dbcheck::util;

namespace {

// A sockaddr for an IPv4 or IPv6 literal, as accept() would hand it over.
struct Peer {
  sockaddr_storage ss{};
  explicit Peer(const std::string& ip) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
    if (inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
    } else {
      REQUIRE(inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1);
      v6->sin6_family = AF_INET6;
    }
  }
  const sockaddr* addr() const { return reinterpret_cast<const sockaddr*>(&ss); }
};

std::vector<Cidr> list(std::initializer_list<const char*> texts) {
  std::vector<Cidr> out;
  for (const char* t : texts) {
    out.push_back(parse_cidr(t).value());
  }
  return out;
}

} // namespace

TEST_CASE("parse_cidr reads ranges and single addresses", "[util][cidr]") {
  CHECK(to_string(parse_cidr("10.0.0.0/24").value()) == "10.0.0.0/24");
  CHECK(to_string(parse_cidr("127.0.0.1").value()) == "127.0.0.1/32");
  CHECK(to_string(parse_cidr("::1").value()) == "::1/128");
  CHECK(to_string(parse_cidr("2001:db8::/32").value()) == "2001:db8::/32");
  CHECK(to_string(parse_cidr("0.0.0.0/0").value()) == "0.0.0.0/0");
}

TEST_CASE("parse_cidr names what is wrong", "[util][cidr]") {
  CHECK(parse_cidr("10.0.0.1/24").error() ==
        "\"10.0.0.1/24\": host bits are set below /24 (did you mean 10.0.0.0/24?)");
  CHECK(parse_cidr("10.0.0.0/33").error() ==
        "\"10.0.0.0/33\": the prefix length must be a number from 0 to 32");
  CHECK(parse_cidr("db1/24").error() ==
        "\"db1/24\": expected an IP address or ADDRESS/BITS (e.g. \"10.0.0.0/24\")");
  CHECK_FALSE(parse_cidr("10.0.0.0/"));
  CHECK_FALSE(parse_cidr("10.0.0.0/2x"));
}

TEST_CASE("address_allowed matches by prefix and family", "[util][cidr]") {
  const auto allow = list({"10.0.0.0/24", "127.0.0.1", "2001:db8::/32", "172.16.0.0/12"});
  CHECK(address_allowed(allow, Peer("10.0.0.7").addr()));
  CHECK_FALSE(address_allowed(allow, Peer("10.0.1.7").addr()));
  CHECK(address_allowed(allow, Peer("127.0.0.1").addr()));
  CHECK_FALSE(address_allowed(allow, Peer("127.0.0.2").addr()));
  CHECK(address_allowed(allow, Peer("2001:db8:1::5").addr()));
  CHECK_FALSE(address_allowed(allow, Peer("2001:db9::5").addr()));
  CHECK(address_allowed(allow, Peer("172.31.255.255").addr()));
  CHECK_FALSE(address_allowed(allow, Peer("172.32.0.0").addr()));
  // A dual-stack listener sees IPv4 clients as mapped addresses: they match as IPv4.
  CHECK(address_allowed(allow, Peer("::ffff:10.0.0.7").addr()));
  CHECK_FALSE(address_allowed(allow, Peer("::ffff:10.0.1.7").addr()));
  CHECK_FALSE(address_allowed(allow, Peer("::1").addr()));
  CHECK_FALSE(address_allowed({}, Peer("10.0.0.7").addr()));
  CHECK_FALSE(address_allowed(allow, nullptr));
}
