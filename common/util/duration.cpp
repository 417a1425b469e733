#include "duration.hpp"

#include "decimal_text.hpp"
#include "format.hpp"

#include <algorithm>
#include <cstdint>

namespace dbcheck::util {
namespace {

// The longest duration accepted: a day, in milliseconds.
constexpr std::int64_t k_day_ms = 86'400'000;

} // namespace

tl::expected<Duration, std::string> parse_duration(std::string_view text) {
  const auto expected_form = [&] {
    return util::format("\"{}\" is not a duration (expected a number with a unit: ms, s or m, "
                        "e.g. \"800ms\" or \"1.5s\")",
                        text);
  };
  const DecimalText parts = split_decimal(text);
  const std::string_view whole = parts.whole;
  const std::string_view unit = parts.unit;
  std::string_view fraction = parts.fraction;
  if ((whole.empty() && fraction.empty()) || fraction.find('.') != std::string_view::npos ||
      unit.empty()) {
    return tl::make_unexpected(expected_form());
  }
  std::int64_t ms_per_unit = 0;
  if (unit == "ms") {
    ms_per_unit = 1;
  } else if (unit == "s") {
    ms_per_unit = 1000;
  } else if (unit == "m") {
    ms_per_unit = 60'000;
  } else {
    return tl::make_unexpected(expected_form());
  }
  // Decimal arithmetic, not binary floating point: 67041.32 * 1000 is 67041319.999999993 as
  // a double, which read as "finer than 1ms" although the text is whole milliseconds.
  std::int64_t units = 0; // saturates just past a day: the exact figure no longer matters
  for (const char c : whole) {
    units = std::min<std::int64_t>(units * 10 + (c - '0'), k_day_ms + 1);
  }
  while (!fraction.empty() && fraction.back() == '0') {
    fraction.remove_suffix(1);
  }
  const std::int64_t whole_ms = units * ms_per_unit;
  // Six significant decimals are finer than 1ms in every unit (1e-6 m = 0.06ms).
  constexpr std::size_t k_max_fraction = 6;
  std::int64_t fraction_ms = 0; // the fraction's share, truncated
  bool exact = fraction.size() <= k_max_fraction;
  if (exact) {
    std::int64_t value = 0;
    std::int64_t scale = 1;
    for (const char c : fraction) {
      value = value * 10 + (c - '0');
      scale *= 10;
    }
    fraction_ms = value * ms_per_unit / scale;
    exact = value * ms_per_unit % scale == 0;
  }
  const std::int64_t ms = whole_ms + fraction_ms;
  if (ms > k_day_ms || (ms == k_day_ms && !fraction.empty())) {
    return tl::make_unexpected(util::format("\"{}\" is longer than a day", text));
  }
  if (!exact) {
    return tl::make_unexpected(
        util::format("\"{}\" is finer than the supported resolution of 1ms", text));
  }
  return Duration{static_cast<Duration::rep>(ms)};
}

std::string format_duration(Duration d) {
  const auto ms = d.count();
  if (ms % 1000 != 0 || ms == 0) {
    return ms < 1000 ? util::format("{}ms", ms)
                     : util::format("{}s", static_cast<double>(ms) / 1000);
  }
  return util::format("{}s", ms / 1000);
}

std::string format_seconds(double seconds) {
  return util::format("{:.3f}s", seconds);
}

} // namespace dbcheck::util
