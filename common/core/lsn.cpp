#include "lsn.hpp"

#include <util/format.hpp>

#include <charconv>

namespace dbcheck::core {

std::optional<Lsn> parse_lsn(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 >= text.size() || slash > 8 ||
      text.size() - slash - 1 > 8) {
    return std::nullopt;
  }
  std::uint32_t hi = 0;
  std::uint32_t lo = 0;
  const char* const begin = text.data();
  const auto r1 = std::from_chars(begin, begin + slash, hi, 16);
  const auto r2 = std::from_chars(begin + slash + 1, begin + text.size(), lo, 16);
  if (r1.ec != std::errc{} || r1.ptr != begin + slash || r2.ec != std::errc{} ||
      r2.ptr != begin + text.size()) {
    return std::nullopt;
  }
  return (static_cast<Lsn>(hi) << 32) | lo;
}

std::string format_lsn(Lsn lsn) {
  return util::format("{:X}/{:X}", static_cast<std::uint32_t>(lsn >> 32),
                      static_cast<std::uint32_t>(lsn & 0xffffffffU));
}

} // namespace dbcheck::core
