#pragma once
// A quantity as a configuration writes it: digits, perhaps a decimal point and more digits,
// then a unit ("1.5s", "512MiB"). The one split the duration and size parsers share; each
// validates the parts by its own rules.

#include <string_view>

namespace dbcheck::util {

// `text` cut where the first character that is neither a digit nor '.' begins.
struct DecimalText {
  std::string_view whole;    // the digits before the first '.' (or all of them)
  std::string_view fraction; // what follows the first '.' up to the unit (may hold another '.')
  std::string_view unit;     // the rest of the text
  bool has_point = false;    // a '.' was written
};

// --- Interface ---

// Splits `text` into whole, fraction and unit; checks nothing.
DecimalText split_decimal(std::string_view text);

} // namespace dbcheck::util
