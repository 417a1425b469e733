#pragma once
// The client certificate and key libpq presents for pg_hba's `cert` method: libpq opens them
// itself by path on each connection, so they are checked here once, at load, where a mistake
// can still be named with its file and line.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace dbcheck::config {

// --- Interface ---

// The largest client key file accepted (a PEM RSA 8192 key is under 7 KiB).
inline constexpr std::size_t k_max_key_file = 64 * 1024;

// Why libpq could not use `file` as the client certificate (`what`: or as a CA bundle; not an
// absolute path, missing, unreadable, not a regular file), or nullopt when it can. libpq would
// silently send no certificate for a missing one; the server would then answer with a vaguer
// refusal.
std::optional<std::string> certificate_file_problem(const std::string& file,
                                                    std::string_view what = "client certificate");

// Why `file` is not a usable client key, or nullopt: an absolute path, read_private_file's
// rules (the same as a password file's: no symlink, owned by this user or root, no group or
// other bits, at most k_max_key_file), and an unencrypted PEM private key (libpq is given no
// passphrase). The key's content is read to check it and wiped, never kept or shown.
std::optional<std::string> key_file_problem(const std::string& file);

} // namespace dbcheck::config
