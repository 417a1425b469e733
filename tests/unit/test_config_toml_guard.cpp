#include "dbcheck_catch.hpp"

#include <config/load_config.hpp>
#include <config/toml_guard.hpp>

#include <string>

using namespace dbcheck::config;

namespace {

// `code` as UTF-8 (2 or 3 bytes: every code point the guard refuses is below U+10000).
std::string utf8(char32_t code) {
  std::string out;
  if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
  } else {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
  }
  out += static_cast<char>(0x80 | (code & 0x3F));
  return out;
}

} // namespace

TEST_CASE("text toml++ 3.3 reads safely is left to it") {
  const char* safe[] = {
      "# Prüfung der Schreibknoten: é, ž, Ж\nx = 1\n",
      "  \t# indented comment line: ü\n",
      "\xEF\xBB\xBF# a byte order mark, then a comment line: é\n",
      "# the escape of ü:\nx = \"\\u00FC\"\n",
      "x = \"中文\" # CJK ideographs and other code points toml++ classifies correctly\n",
      "x = \"\xFF\" # broken UTF-8 is toml++'s own error to report\n",
  };
  for (const char* text : safe) {
    INFO(text);
    CHECK_FALSE(find_toml_hazard(text).has_value());
  }
}

TEST_CASE("a character toml++ 3.3 mishandles is refused with its line, outside comment lines") {
  SECTION("the fuzzer's inputs: a config that is only 'ž', and U+FEBF in a broken value") {
    const auto h = find_toml_hazard("\xC5\xBE");
    REQUIRE(h);
    CHECK(h->line == 1);
    CHECK_THAT(h->why, dbcheck_test::StartsWith("U+017E 'ž': Debian 12's TOML parser"));
    CHECK_THAT(h->why, dbcheck_test::EndsWith("in a string write it as \\u017E"));
    CHECK(find_toml_hazard(std::string("aser =+\"h\0\xEF\xBA\xBF"
                                       "etc",
                                       13))
              ->line == 1);
  }
  SECTION("in a value, a key, a string, a trailing comment") {
    CHECK(find_toml_hazard("a = 1\n\nx = 1é\n")->line == 3);
    CHECK(find_toml_hazard("# é\n[cluster.ž]\n")->line == 2);
    CHECK(find_toml_hazard("x = \"Müller\"\n")->line == 1);
    CHECK(find_toml_hazard("x = 1 # é\n")->line == 1);
    CHECK(find_toml_hazard("x = \"\"\"a \\\n\n  žluť\"\"\"\n")->line == 3);
  }
  SECTION("every mishandled code point, and none of its neighbours") {
    const std::pair<char32_t, char32_t> ranges[] = {
        {0xA1, 0x499}, {0x2C5E, 0x2FFF}, {0x3001, 0x3057}, {0xFB26, 0xFEFE}};
    for (const auto& [low, high] : ranges) {
      for (char32_t c = low; c <= high; ++c) {
        INFO(static_cast<unsigned>(c));
        CHECK(find_toml_hazard("x = " + utf8(c)).has_value());
      }
      CHECK_FALSE(find_toml_hazard("x = " + utf8(low - 1)).has_value());
      CHECK_FALSE(find_toml_hazard("x = " + utf8(high + 1)).has_value());
    }
  }
}

TEST_CASE("parse_config refuses the hazard as invalid TOML at its file and line") {
  const auto r = parse_config("[defaults]\ntimeout = \"800ms\" ž\n", "dbcheck.toml");
  REQUIRE_FALSE(r);
  REQUIRE(r.error().messages.size() == 1);
  CHECK_THAT(
      r.error().messages[0],
      dbcheck_test::StartsWith("dbcheck.toml:2: invalid TOML: U+017E 'ž': Debian 12's TOML"));
  // A whole config with such characters on its comment lines parses.
  const auto ok = parse_config(R"(# Prüfung der Schreibknoten
[defaults]
timeout = "800ms"
  # «Жук» ž
[cluster.cache]
engine = "redis"
sentinels = ["127.0.0.1:26379", "127.0.0.1:26380", "127.0.0.1:26381"]
master_name = "mymaster"
[backend.cache_write]
cluster = "cache"
role = "primary"
)",
                               "dbcheck.toml");
  INFO((ok ? std::string() : ok.error().messages.front()));
  CHECK(ok);
}
