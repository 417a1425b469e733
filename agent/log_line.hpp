#pragma once
// The agent's log: one logfmt line per event on stderr (journald keeps it under systemd).

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace dbcheck::agent {

// --- Interface ---

// Writes `time=... level=LEVEL msg=MSG key=value ...` as one line; values with spaces, quotes
// or '=' are quoted and escaped. Safe to call from any thread.
void log_event(std::string_view level, std::string_view msg,
               std::initializer_list<std::pair<std::string_view, std::string>> fields);

// The same line as text, without writing it (for tests).
std::string format_event(std::string_view level, std::string_view msg,
                         std::initializer_list<std::pair<std::string_view, std::string>> fields,
                         std::string_view time);

} // namespace dbcheck::agent
