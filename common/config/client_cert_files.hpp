#pragma once
// Client certificates, keys and CA bundles. libpq opens them itself by path on each
// connection, so they are checked here once, at load, where a mistake can still be named with
// its file and line; the Redis TLS probe reads them through the same readers, at each new
// context, and gives OpenSSL the bytes.

#include "secret.hpp"

#include <tl/expected.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace dbcheck::config {

// --- Interface ---

// The largest client key file accepted (a PEM RSA 8192 key is under 7 KiB).
inline constexpr std::size_t k_max_key_file = 64 * 1024;

// The largest certificate or CA bundle file accepted (Debian's whole CA store is ~220 KiB).
inline constexpr std::size_t k_max_certificate_file = 1024 * 1024;

// The whole of certificate (or CA bundle: `what`) `file`: an absolute path to a regular file
// (following symbolic links: certificates are public, and often links), opened without
// blocking, at most k_max_certificate_file bytes, not holding a private key others may read.
// Or an error text naming `what` and the file.
tl::expected<std::string, std::string> read_certificate_file(const std::string& file,
                                                             std::string_view what);

// The client key in `file`: an absolute path, read_private_file's rules, an unencrypted PEM
// private key. Or an error text naming the file (never the key's content).
tl::expected<Secret, std::string> read_key_file(const std::string& file);

// Why read_certificate_file refuses `file` as the client certificate (`what`: or as a CA
// bundle), or nullopt when it can be used. libpq would silently send no certificate for a
// missing one; the server would then answer with a vaguer refusal.
std::optional<std::string> certificate_file_problem(const std::string& file,
                                                    std::string_view what = "client certificate");

// Why read_key_file refuses `file` (read_private_file's rules are a password file's: no
// symlink, owned by this user or root, no group or other bits, at most k_max_key_file), or
// nullopt. The key's content is read to check it and wiped, never kept or shown.
std::optional<std::string> key_file_problem(const std::string& file);

} // namespace dbcheck::config
