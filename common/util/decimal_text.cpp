#include "decimal_text.hpp"

namespace dbcheck::util {

DecimalText split_decimal(std::string_view text) {
  std::size_t unit_pos = 0;
  while (unit_pos < text.size() &&
         ((text[unit_pos] >= '0' && text[unit_pos] <= '9') || text[unit_pos] == '.')) {
    ++unit_pos;
  }
  const std::string_view number = text.substr(0, unit_pos);
  const std::size_t dot = number.find('.');
  DecimalText out;
  out.whole = number.substr(0, dot);
  out.has_point = dot != std::string_view::npos;
  out.fraction = out.has_point ? number.substr(dot + 1) : std::string_view{};
  out.unit = text.substr(unit_pos);
  return out;
}

} // namespace dbcheck::util
