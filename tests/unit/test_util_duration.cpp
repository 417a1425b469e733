#include "dbcheck_catch.hpp"

#include <util/duration.hpp>

using dbcheck::util::Duration;
using dbcheck::util::format_duration;
using dbcheck::util::parse_duration;

TEST_CASE("parse_duration accepts numbers with ms, s and m units", "[util][duration]") {
  const auto [text, ms] = GENERATE(table<const char*, long>({
      {"800ms", 800},
      {"1s", 1000},
      {"1.5s", 1500},
      {"0.25s", 250},
      {"2m", 120000},
      {"0ms", 0},
      {"1.500000s", 1500},
      {".5s", 500},
      // Found by fuzz/fuzz_duration: binary floating point made these "finer than 1ms".
      {"67041.32s", 67041320},
      {"86399.999s", 86399999},
      {"1439.99995m", 86399997},
  }));
  CAPTURE(text);
  const auto d = parse_duration(text);
  REQUIRE(d);
  CHECK(d->count() == ms);
}

TEST_CASE("parse_duration rejects malformed text with the expected form", "[util][duration]") {
  const auto [text, message] = GENERATE(table<const char*, const char*>({
      {"5x", "\"5x\" is not a duration (expected a number with a unit: ms, s or m, e.g. "
             "\"800ms\" or \"1.5s\")"},
      {"800", "\"800\" is not a duration (expected a number with a unit: ms, s or m, e.g. "
              "\"800ms\" or \"1.5s\")"},
      {"s", "\"s\" is not a duration (expected a number with a unit: ms, s or m, e.g. "
            "\"800ms\" or \"1.5s\")"},
      {"", "\"\" is not a duration (expected a number with a unit: ms, s or m, e.g. "
           "\"800ms\" or \"1.5s\")"},
      {"-1s", "\"-1s\" is not a duration (expected a number with a unit: ms, s or m, e.g. "
              "\"800ms\" or \"1.5s\")"},
      {"1.2.3s", "\"1.2.3s\" is not a duration (expected a number with a unit: ms, s or m, e.g. "
                 "\"800ms\" or \"1.5s\")"},
      {"0.5ms", "\"0.5ms\" is finer than the supported resolution of 1ms"},
      {"2000m", "\"2000m\" is longer than a day"},
      {"86400.0005s", "\"86400.0005s\" is longer than a day"},
      {"1.0000001s", "\"1.0000001s\" is finer than the supported resolution of 1ms"},
  }));
  CAPTURE(text);
  const auto d = parse_duration(text);
  REQUIRE_FALSE(d);
  CHECK(d.error() == message);
}

TEST_CASE("format_duration reads back", "[util][duration]") {
  CHECK(format_duration(Duration{800}) == "800ms");
  CHECK(format_duration(Duration{1000}) == "1s");
  CHECK(format_duration(Duration{1500}) == "1.5s");
  for (long ms : {1L, 250L, 1000L, 1500L, 60000L}) {
    CHECK(parse_duration(format_duration(Duration{ms})).value().count() == ms);
  }
}

TEST_CASE("format_duration reads back up to a day (found by fuzz/fuzz_duration)",
          "[util][duration]") {
  // Above ~2.4 hours a double's error exceeded the old 1e-9 ms tolerance: "67041.32s" failed.
  for (long ms = 86'400'000; ms > 0; ms -= 9'973) {
    const auto back = parse_duration(format_duration(Duration{ms}));
    REQUIRE(back);
    REQUIRE(back->count() == ms);
  }
}
