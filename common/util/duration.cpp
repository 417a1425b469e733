#include "duration.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace dbcheck::util {

tl::expected<Duration, std::string> parse_duration(std::string_view text) {
  const auto expected_form = [&] {
    return fmt::format("\"{}\" is not a duration (expected a number with a unit: ms, s or m, "
                       "e.g. \"800ms\" or \"1.5s\")",
                       text);
  };
  std::size_t unit_pos = 0;
  while (unit_pos < text.size() &&
         ((text[unit_pos] >= '0' && text[unit_pos] <= '9') || text[unit_pos] == '.')) {
    ++unit_pos;
  }
  const std::string_view number = text.substr(0, unit_pos);
  const std::string_view unit = text.substr(unit_pos);
  if (number.empty() || unit.empty()) {
    return tl::make_unexpected(expected_form());
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc{} || end != number.data() + number.size() || !std::isfinite(value)) {
    return tl::make_unexpected(expected_form());
  }
  double ms_per_unit = 0;
  if (unit == "ms") {
    ms_per_unit = 1;
  } else if (unit == "s") {
    ms_per_unit = 1000;
  } else if (unit == "m") {
    ms_per_unit = 60'000;
  } else {
    return tl::make_unexpected(expected_form());
  }
  const double ms = value * ms_per_unit;
  if (ms > 86'400'000.0) {
    return tl::make_unexpected(fmt::format("\"{}\" is longer than a day", text));
  }
  if (std::abs(ms - std::round(ms)) > 1e-9) {
    return tl::make_unexpected(
        fmt::format("\"{}\" is finer than the supported resolution of 1ms", text));
  }
  return Duration{static_cast<Duration::rep>(std::llround(ms))};
}

std::string format_duration(Duration d) {
  const auto ms = d.count();
  if (ms % 1000 != 0 || ms == 0) {
    return ms < 1000 ? fmt::format("{}ms", ms) : fmt::format("{}s", static_cast<double>(ms) / 1000);
  }
  return fmt::format("{}s", ms / 1000);
}

std::string format_seconds(double seconds) {
  return fmt::format("{:.3f}s", seconds);
}

} // namespace dbcheck::util
