#pragma once
// Classifying PostgreSQL failures: SQLSTATE when the server gave one, message text otherwise.
//
// libpq (15) exposes no SQLSTATE for a failed connection attempt, only the server's message,
// so connection failures are matched on the server's English texts (lc_messages = C/en). A
// server speaking another language still fails closed, as a generic rejection.

#include "probe_error.hpp"

#include <string>
#include <string_view>

namespace dbcheck::core {

// --- Interface ---

// Classifies libpq's error message for a failed connection attempt.
ProbeError classify_pg_connect_error(std::string_view libpq_message);

// Classifies an error result of a query by its SQLSTATE (e.g. "57014" -> timeout).
ProbeError classify_pg_query_error(std::string_view sqlstate, std::string_view message);

// Folds a multi-line libpq message into one line and drops libpq's "connection to server at
// ... failed:" preamble, keeping what the server or the OS said.
std::string one_line(std::string_view libpq_message);

} // namespace dbcheck::core
