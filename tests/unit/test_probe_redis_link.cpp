// The link's reading half (probe::ReplyReader: core::ReplyBounds in front of hiredis's reader)
// and its connect by name (resolved within the deadline, never by hiredis). The same reader
// runs under fuzz/fuzz_redis_reply.cpp.
#include "dbcheck_catch.hpp"

#include <probe/redis_link.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

using namespace dbcheck;
using core::RespValue;

namespace {

// Every reply `reader` has ready, then the error that ended them (or "").
std::vector<RespValue> drain(probe::ReplyReader& reader, std::string& error) {
  std::vector<RespValue> out;
  for (;;) {
    auto r = reader.next();
    if (!r) {
      error = r.error().detail;
      return out;
    }
    if (!*r) {
      return out;
    }
    out.push_back(std::move(**r));
  }
}

} // namespace

TEST_CASE("a reply reader reads replies fed in any chunking", "[probe][redis]") {
  const std::string stream = "+OK\r\n*2\r\n$8\r\n10.0.0.1\r\n$4\r\n6379\r\n:7\r\n";
  probe::ReplyReader reader;
  std::vector<RespValue> got;
  std::string error;
  for (const char c : stream) {
    reader.feed(std::string_view(&c, 1));
    for (auto& v : drain(reader, error)) {
      got.push_back(std::move(v));
    }
  }
  CHECK(error.empty());
  REQUIRE(got.size() == 3);
  CHECK(got[0].str == "OK");
  REQUIRE(got[1].elements.size() == 2);
  CHECK(got[1].elements[0].str == "10.0.0.1");
  CHECK(got[2].integer == 7);
}

TEST_CASE("a reply announcing a huge array is refused, after the replies before it",
          "[probe][redis]") {
  probe::ReplyReader reader;
  reader.feed("+OK\r\n*1111111116\r\n");
  reader.feed(std::string(1 << 16, 'x')); // more of the hostile reply: dropped
  std::string error;
  const auto got = drain(reader, error);
  REQUIRE(got.size() == 1);
  CHECK(got[0].str == "OK");
  CHECK(error == "reply announces 1111111116 elements, more than the 65536 allowed");
  // Final: the stream cannot be read past it.
  auto again = reader.next();
  REQUIRE_FALSE(again);
  CHECK(again.error().kind == core::Failure::protocol);
}

TEST_CASE("a reply announcing a huge string is refused at its header", "[probe][redis]") {
  probe::ReplyReader reader;
  reader.feed("*2\r\n$1073741824\r\nxxxx");
  auto r = reader.next();
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == core::Failure::protocol);
  CHECK(r.error().detail ==
        "reply announces a 1073741824-byte string, more than the 4194304 bytes allowed");
}

TEST_CASE("hiredis's own protocol errors still come through", "[probe][redis]") {
  probe::ReplyReader reader;
  reader.feed("<html>\r\n");
  auto r = reader.next();
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == core::Failure::protocol);
  CHECK(r.error().detail.find("Protocol error") != std::string::npos);
}

TEST_CASE("a link to a host name is resolved by the deadline-bound resolver", "[probe][redis]") {
  // A listening socket on 127.0.0.1: "localhost" must reach it (resolved by us, then the
  // address handed to hiredis).
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const auto port = ntohs(addr.sin_port);

  auto link =
      probe::RedisLink::connect({"localhost", port}, probe::Deadline::in(util::Duration{2000}));
  CHECK(link.has_value());

  SECTION("a name that cannot exist fails with the name and why") {
    auto bad = probe::RedisLink::connect({"no-such-host.invalid", port},
                                         probe::Deadline::in(util::Duration{2000}));
    REQUIRE_FALSE(bad);
    CHECK(bad.error().detail.rfind("no-such-host.invalid did not resolve: ", 0) == 0);
  }
  SECTION("no time left: no lookup, no wait") {
    const auto t0 = std::chrono::steady_clock::now();
    auto late =
        probe::RedisLink::connect({"no-such-host.invalid", port},
                                  probe::Deadline{probe::Clock::now() - std::chrono::seconds{1}});
    REQUIRE_FALSE(late);
    CHECK(late.error().kind == core::Failure::timeout);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds{100});
  }
  ::close(fd);
}
