#pragma once
// Reading secrets (password files, private keys) without trusting the path: no symlink, no
// FIFO, no file another account controls or may read, nothing large.

#include "secret.hpp"

#include <tl/expected.hpp>

#include <cstddef>
#include <string>

namespace dbcheck::config {

// --- Interface ---

// The largest password file accepted.
inline constexpr std::size_t k_max_secret_file = 4096;

// Reads the whole of `file` as a secret: opened without following a symlink and without
// blocking (a FIFO is refused, never waited on), then checked on the open descriptor: a regular
// file, owned by the effective user or root (root itself accepts any owner), no group or other
// permission bits, at most `max_bytes`. An error names `what` ("password file"), the file, the
// rule it breaks and a fix that cannot break the checks that read the file as its owner.
tl::expected<Secret, std::string> read_private_file(const std::string& file, std::string_view what,
                                                    std::size_t max_bytes);

// Reads a password file (read_private_file's rules, at most k_max_secret_file bytes).
// Returns the password without its trailing newline, or an error text naming the file.
tl::expected<Secret, std::string> read_password_file(const std::string& file);

} // namespace dbcheck::config
