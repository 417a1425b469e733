#include "dbcheck_catch.hpp"

#include <util/byte_size.hpp>

using namespace dbcheck::util;

TEST_CASE("sizes parse in binary units", "[util][byte_size]") {
  const auto [text, bytes] = GENERATE(table<const char*, std::uint64_t>({
      {"0B", 0},
      {"512B", 512},
      {"1KiB", 1024},
      {"64MiB", 64ULL << 20},
      {"1GiB", 1ULL << 30},
      {"1.5GiB", (1ULL << 30) + (1ULL << 29)},
      {"0.5MiB", 1ULL << 19},
      {"2TiB", 2ULL << 40},
      {"1024TiB", 1ULL << 50},
  }));
  CAPTURE(text);
  const auto parsed = parse_byte_size(text);
  REQUIRE(parsed);
  CHECK(*parsed == bytes);
}

TEST_CASE("a size without a known unit says what is expected", "[util][byte_size]") {
  const char* text =
      GENERATE("1", "1GB", "1 GiB", "1gib", "GiB", "", "1.GiB", "1.2.3MiB", "-1MiB", "5%");
  CAPTURE(text);
  const auto parsed = parse_byte_size(text);
  REQUIRE_FALSE(parsed);
  CHECK(parsed.error().find("is not a size (expected a number with a unit: B, KiB, MiB, GiB or "
                            "TiB") != std::string::npos);
}

TEST_CASE("a size beyond 1024 TiB is refused", "[util][byte_size]") {
  CHECK(parse_byte_size("1025TiB").error() == "\"1025TiB\" is too large (at most 1024TiB)");
  CHECK(parse_byte_size("99999999999999999999999GiB").error().find("too large") !=
        std::string::npos);
}

TEST_CASE("bytes are shown in the largest unit that keeps at least 1", "[util][byte_size]") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1024) == "1 KiB");
  CHECK(format_bytes(180ULL << 20) == "180 MiB");
  CHECK(format_bytes((1ULL << 30) + (1ULL << 29)) == "1.5 GiB");
  CHECK(format_bytes((20ULL << 30) - 1) == "19.9 GiB");
  CHECK(format_bytes(3ULL << 40) == "3 TiB");
}

TEST_CASE("a size with more than six decimals is refused", "[util][byte_size]") {
  CHECK(parse_byte_size("1.0000001GiB").error() == "\"1.0000001GiB\" has more than 6 decimals");
}
