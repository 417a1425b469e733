#pragma once
// Sizes as written by people in config files ("1GiB", "512MiB") and as shown back to them.

#include <tl/expected.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace dbcheck::util {

// --- Interface ---

// Parses "<number><unit>" with unit B, KiB, MiB, GiB or TiB (powers of 1024; decimals allowed,
// e.g. "1.5GiB"), up to 1024 TiB. Returns the bytes, or an error text saying what was expected.
// Decimal units (kB, MB, GB) are refused: PostgreSQL reads them as powers of 1024, df as
// powers of 1000, and a threshold must not depend on which the reader had in mind.
tl::expected<std::uint64_t, std::string> parse_byte_size(std::string_view text);

// Formats bytes for people in the largest unit that keeps at least 1 ("180 MiB", "1.5 GiB",
// "512 B"), with at most one decimal.
std::string format_bytes(std::uint64_t bytes);

} // namespace dbcheck::util
