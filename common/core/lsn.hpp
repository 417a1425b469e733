#pragma once
// PostgreSQL WAL positions ("16/B374D848") as plain numbers.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dbcheck::core {

// A WAL position: byte offset into the cluster's WAL stream.
using Lsn = std::uint64_t;

// --- Interface ---

// Parses PostgreSQL's text form "HI/LO" (both hex); nullopt when malformed.
std::optional<Lsn> parse_lsn(std::string_view text);

// Formats back to "HI/LO" as PostgreSQL prints it.
std::string format_lsn(Lsn lsn);

} // namespace dbcheck::core
