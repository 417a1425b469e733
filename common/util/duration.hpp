#pragma once
// Durations as written by people in config files ("800ms", "1s", "1.5s", "2m").

#include <tl/expected.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace dbcheck::util {

// Millisecond resolution is ample for health checks and keeps arithmetic exact.
using Duration = std::chrono::milliseconds;

// --- Interface ---

// Parses "<number><unit>" with unit ms, s or m (decimals allowed, e.g. "1.5s").
// Returns the duration, or an error text saying what was expected.
tl::expected<Duration, std::string> parse_duration(std::string_view text);

// Formats a duration the way parse_duration reads it back ("800ms", "1s", "1.5s").
std::string format_duration(Duration d);

// Formats seconds for humans with millisecond precision ("0.004s", "12.300s").
std::string format_seconds(double seconds);

} // namespace dbcheck::util
