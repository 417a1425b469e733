#pragma once
// Reading a secret from a file, refusing files others could read.

#include "secret.hpp"

#include <tl/expected.hpp>

#include <string>

namespace dbcheck::config {

// --- Interface ---

// Reads a password file, refusing one that group or others may access (as libpq does .pgpass).
// Returns the password without its trailing newline, or an error text naming the file.
tl::expected<Secret, std::string> read_password_file(const std::string& file);

} // namespace dbcheck::config
