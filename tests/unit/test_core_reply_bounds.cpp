// The caps on what a Redis reply may announce (core/reply_bounds.hpp): headers beyond them are
// refused before hiredis reads them, whatever the chunking; what Redis and Sentinel really send
// passes; the refusal says which header and how much of the chunk is still whole replies.
#include "dbcheck_catch.hpp"

#include <core/reply_bounds.hpp>

#include <string>

using dbcheck::core::ReplyBounds;
using dbcheck::core::ReplyCaps;

namespace {

// Scans `bytes` in chunks of `chunk` bytes; returns the refusal's reason, or "".
std::string scan_in_chunks(ReplyBounds& b, const std::string& bytes, std::size_t chunk) {
  for (std::size_t i = 0; i < bytes.size(); i += chunk) {
    if (auto r = b.scan(std::string_view(bytes).substr(i, chunk)); !r) {
      return r.error().reason;
    }
  }
  return {};
}

std::string bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

} // namespace

TEST_CASE("what Sentinel and Redis send passes, in any chunking", "[core][resp]") {
  const std::string master = "*6\r\n" + bulk("name") + bulk("cache") + bulk("flags") +
                             bulk("master") + bulk("config-epoch") + bulk("3");
  const std::string stream = "+OK\r\n" + ("*2\r\n" + bulk("10.0.0.1") + bulk("6379")) + master +
                             "*3\r\n$6\r\nmaster\r\n:123\r\n*1\r\n*3\r\n" + bulk("10.0.0.2") +
                             bulk("6379") + bulk("123") + "*-1\r\n$-1\r\n-ERR no\r\n:-5\r\n*0\r\n" +
                             "$0\r\n\r\n";
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{2}, std::size_t{7}, stream.size()}) {
    ReplyBounds b;
    CHECK(scan_in_chunks(b, stream, chunk).empty());
  }
}

TEST_CASE("an array announcing more elements than allowed is refused at its header",
          "[core][resp]") {
  ReplyBounds b;
  const std::string stream = "+OK\r\n*1111111116\r\n$1\r\nx\r\n";
  const auto r = b.scan(stream);
  REQUIRE_FALSE(r);
  CHECK(r.error().reason == "reply announces 1111111116 elements, more than the 65536 allowed");
  // Every byte before the header's end may still go to hiredis (the +OK reply is whole).
  CHECK(r.error().accepted == stream.find("\r\n$") + 1);
  // Refused for good: the stream cannot be read past it.
  const auto again = b.scan("+OK\r\n");
  REQUIRE_FALSE(again);
  CHECK(again.error().accepted == 0);
  CHECK(again.error().reason == r.error().reason);
}

TEST_CASE("a bulk string announcing more bytes than allowed is refused at its header",
          "[core][resp]") {
  ReplyBounds b;
  CHECK(scan_in_chunks(b, "*2\r\n$1073741824\r\n", 3) ==
        "reply announces a 1073741824-byte string, more than the 4194304 bytes allowed");
}

TEST_CASE("the caps count the whole reply, nested arrays included", "[core][resp]") {
  SECTION("elements summed over nested arrays") {
    ReplyBounds b{ReplyCaps{10, 1 << 20}};
    CHECK(scan_in_chunks(b, "*2\r\n*6\r\n", 1).empty());
    CHECK(scan_in_chunks(b, "*5\r\n", 1) ==
          "reply announces 13 elements in all, more than the 10 allowed");
  }
  SECTION("strings that each fit but not together") {
    ReplyBounds b{ReplyCaps{100, 64}};
    CHECK(scan_in_chunks(b, "*2\r\n$30\r\n" + std::string(30, 'x') + "\r\n", 4).empty());
    CHECK(scan_in_chunks(b, "$30\r\n", 4) ==
          "reply announces more than the 64 bytes allowed in all");
  }
  SECTION("an unterminated line") {
    ReplyBounds b{ReplyCaps{100, 64}};
    CHECK(scan_in_chunks(b, "+" + std::string(70, 'x'), 5) ==
          "reply holds more than the 64 bytes allowed");
  }
  SECTION("the allowance is per reply: many small replies pass") {
    ReplyBounds b{ReplyCaps{4, 32}};
    std::string stream;
    for (int i = 0; i < 100; ++i) {
      stream += "*2\r\n" + bulk("pmessage") + bulk("x");
    }
    CHECK(scan_in_chunks(b, stream, 9).empty());
  }
}

TEST_CASE("lengths are read as hiredis 0.14 reads them", "[core][resp]") {
  // Not a number: hiredis reads -1, a nil; nothing is allocated.
  ReplyBounds nil_text;
  CHECK(scan_in_chunks(nil_text, "$abc\r\n*x1\r\n+OK\r\n", 1).empty());
  // hiredis stops at the first '\r': "12\r3" is 12.
  ReplyBounds cr;
  CHECK(scan_in_chunks(cr, "$2\r3\r\nab\r\n+OK\r\n", 1).empty());
  // A negative count other than -1 would reach calloc as an enormous size.
  ReplyBounds negative;
  CHECK(scan_in_chunks(negative, "*-2\r\n", 1) == "reply announces -2 elements");
  // A length too long to be read without overflow (hiredis does not check).
  ReplyBounds long_text;
  CHECK(scan_in_chunks(long_text, "$" + std::string(25, '9') + "\r\n", 4) ==
        "reply announces a length of more than 19 characters");
  // 2^64 + 1 would wrap to 1 in hiredis: refused, never read as a small number.
  ReplyBounds wrap;
  CHECK_FALSE(scan_in_chunks(wrap, "*18446744073709551617\r\n", 1).empty());
}

TEST_CASE("bytes hiredis refuses itself are let through for it to say so", "[core][resp]") {
  ReplyBounds b{ReplyCaps{100, 64}};
  CHECK(scan_in_chunks(b, "<html>not RESP</html>\r\n", 3).empty());
  // ...but still count against the byte cap.
  CHECK(scan_in_chunks(b, std::string(50, 'x'), 10) ==
        "reply holds more than the 64 bytes allowed");
}

TEST_CASE("what hiredis 1.x would read without bound is refused here", "[core][resp]") {
  SECTION("arrays nested deeper than hiredis 0.14 reads") {
    std::string eight;
    for (int i = 0; i < 8; ++i) {
      eight += "*1\r\n";
    }
    ReplyBounds fits;
    CHECK(scan_in_chunks(fits, eight + ":1\r\n", 1).empty());
    ReplyBounds deep;
    CHECK(scan_in_chunks(deep, eight + "*1\r\n", 1) == "reply nests arrays more than 8 deep");
  }
  SECTION("RESP3 aggregates and strings, however small") {
    for (const std::string bytes :
         {"%1111111116\r\n", "~1\r\n", ">3\r\n", "|1\r\n", "=1073741824\r\n", "!5\r\n", ",1.5\r\n",
          "_\r\n", "#t\r\n", "(1\r\n", "*2\r\n+OK\r\n%1\r\n"}) {
      ReplyBounds b;
      const auto r = b.scan(bytes);
      CAPTURE(bytes);
      REQUIRE_FALSE(r);
      CHECK_THAT(r.error().reason, dbcheck_test::StartsWith("reply has RESP3 type '"));
      CHECK(r.error().accepted == bytes.find_first_of("%~>|=!,_#("));
    }
  }
}
