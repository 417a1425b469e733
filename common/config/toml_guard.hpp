// Refuses, before toml++ reads it, the text Debian 12's toml++ (3.3.0) cannot read safely.
//
// toml++ 3.3's is_non_ascii_horizontal_whitespace() reaches __builtin_unreachable() for
// U+00A1..U+0499 (é, ü, ž, Greek, Cyrillic), U+2C5E..U+2FFF, U+3001..U+3057 and U+FB26..U+FEFE
// wherever its parser asks "is this whitespace?". That is undefined behaviour in the product,
// not only a sanitizer report, and which characters it asks about depends on how far it got in
// text that may be broken (fuzzing found one inside what looked like a string), so those code
// points never reach it, except on comment lines, which it reads without asking. In a string they
// can be written as a \u escape.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dbcheck::config {

// Where and why the text was refused: a 1-based line and a sentence for an operator.
struct TomlHazard {
  int line = 0;
  std::string why;
};

// The first character in `text` toml++ 3.3 must not see, or nothing when it is safe to parse.
std::optional<TomlHazard> find_toml_hazard(std::string_view text);

} // namespace dbcheck::config
