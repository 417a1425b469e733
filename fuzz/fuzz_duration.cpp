// util/duration: parse_duration on any text, and format_duration -> parse_duration round trips.
#include "fuzz_check.hpp"

#include <util/duration.hpp>

#include <cstdint>
#include <cstring>

using dbcheck::fuzz::require;
using dbcheck::util::Duration;

namespace {

constexpr Duration::rep k_day_ms = 86'400'000;

// What parse_duration accepts, format_duration writes back the same, and that text reads
// back as the same duration (durations are shown in logs and /health as they were read).
void check_round_trip(Duration d) {
  const std::string text = dbcheck::util::format_duration(d);
  const auto back = dbcheck::util::parse_duration(text);
  if (!back) {
    std::fprintf(stderr, "%lld ms -> \"%s\" -> %s\n", static_cast<long long>(d.count()),
                 text.c_str(), back.error().c_str());
  }
  require(back.has_value(), "format_duration's text parses");
  require(*back == d, "format_duration's text parses back to the same duration");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const std::string_view text = dbcheck::fuzz::as_text(data, size);
  const auto parsed = dbcheck::util::parse_duration(text);
  if (parsed) {
    require(parsed->count() >= 0 && parsed->count() <= k_day_ms, "a duration is 0..1 day");
    check_round_trip(*parsed);
  } else {
    require(!parsed.error().empty(), "a refusal says why");
  }
  // Any whole number of milliseconds up to a day, from the first bytes, must round-trip too.
  if (size >= sizeof(std::uint32_t)) {
    std::uint32_t raw = 0;
    std::memcpy(&raw, data, sizeof raw);
    check_round_trip(Duration{static_cast<Duration::rep>(raw % (k_day_ms + 1))});
  }
  return 0;
}
