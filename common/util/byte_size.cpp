#include "byte_size.hpp"

#include "decimal_text.hpp"
#include "format.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace dbcheck::util {
namespace {

constexpr std::array<std::pair<std::string_view, std::uint64_t>, 5> k_units = {{
    {"B", 1},
    {"KiB", 1ULL << 10},
    {"MiB", 1ULL << 20},
    {"GiB", 1ULL << 30},
    {"TiB", 1ULL << 40},
}};

// The largest size accepted: 1024 TiB, far beyond a volume a threshold guards.
constexpr std::uint64_t k_max = 1ULL << 50;

} // namespace

tl::expected<std::uint64_t, std::string> parse_byte_size(std::string_view text) {
  const auto expected_form = [&] {
    return util::format("\"{}\" is not a size (expected a number with a unit: B, KiB, MiB, GiB "
                        "or TiB, e.g. \"1GiB\" or \"512MiB\")",
                        text);
  };
  const auto [whole, fraction, unit, has_point] = split_decimal(text);
  if ((whole.empty() && fraction.empty()) || fraction.find('.') != std::string_view::npos ||
      (has_point && fraction.empty())) {
    return tl::make_unexpected(expected_form());
  }
  // A named copy: clang before 16 cannot capture a structured binding in a lambda.
  const std::string_view unit_name = unit;
  const auto row = std::find_if(k_units.begin(), k_units.end(),
                                [&](const auto& u) { return u.first == unit_name; });
  if (row == k_units.end()) {
    return tl::make_unexpected(expected_form());
  }
  const std::uint64_t per_unit = row->second;
  std::uint64_t units = 0; // saturates just past the maximum: the exact figure no longer matters
  for (const char c : whole) {
    units = std::min<std::uint64_t>(units * 10 + static_cast<std::uint64_t>(c - '0'), k_max + 1);
  }
  // The fraction's share, truncated to whole bytes. Six decimals at most (finer than a byte
  // of a MiB, and per_unit * 10^6 < 2^60 never overflows).
  constexpr std::size_t k_max_fraction = 6;
  if (fraction.size() > k_max_fraction) {
    return tl::make_unexpected(
        util::format("\"{}\" has more than {} decimals", text, k_max_fraction));
  }
  std::uint64_t numerator = 0;
  std::uint64_t denominator = 1;
  for (const char c : fraction) {
    numerator = numerator * 10 + static_cast<std::uint64_t>(c - '0');
    denominator *= 10;
  }
  const std::uint64_t fraction_bytes = per_unit * numerator / denominator;
  if (units > k_max / per_unit) {
    return tl::make_unexpected(util::format("\"{}\" is too large (at most 1024TiB)", text));
  }
  const std::uint64_t bytes = units * per_unit + fraction_bytes;
  if (bytes > k_max) {
    return tl::make_unexpected(util::format("\"{}\" is too large (at most 1024TiB)", text));
  }
  return bytes;
}

std::string format_bytes(std::uint64_t bytes) {
  std::size_t i = k_units.size() - 1;
  while (i > 0 && bytes < k_units[i].second) {
    --i;
  }
  if (i == 0) {
    return util::format("{} B", bytes);
  }
  const std::uint64_t per = k_units[i].second;
  const std::uint64_t tenths = (bytes % per) * 10 / per; // truncated: never shows more than is free
  if (tenths == 0) {
    return util::format("{} {}", bytes / per, k_units[i].first);
  }
  return util::format("{}.{} {}", bytes / per, tenths, k_units[i].first);
}

} // namespace dbcheck::util
