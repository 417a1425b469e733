#include "client_cert_files.hpp"

#include "password_file.hpp"

#include <util/format.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dbcheck::config {
namespace {

// libpq opens the files later, from whatever directory the check runs in: only an absolute
// path names the file that was checked here.
std::optional<std::string> not_absolute(const std::string& file, std::string_view what) {
  if (file.empty() || file.front() != '/') {
    return util::format("{} \"{}\" is not an absolute path", what, file);
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string> certificate_file_problem(const std::string& file,
                                                    std::string_view what) {
  if (auto bad = not_absolute(file, what)) {
    return bad;
  }
  // Opened, not merely stat()ed: readable by this user is what libpq will need.
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return util::format("cannot read {} {}: {}", what, file, std::strerror(errno));
  }
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  ::close(fd);
  if (!regular) {
    return util::format("{} {} is not a regular file", what, file);
  }
  return std::nullopt;
}

std::optional<std::string> key_file_problem(const std::string& file) {
  if (auto bad = not_absolute(file, "client key file")) {
    return bad;
  }
  const auto key = read_private_file(file, "client key file", k_max_key_file);
  if (!key) {
    return key.error();
  }
  const std::string_view text = key->reveal();
  // libpq loads PEM only, and is given no passphrase: an encrypted key would fail on every
  // connection with a less telling OpenSSL error.
  if (text.find("PRIVATE KEY-----") == std::string_view::npos) {
    return util::format("client key file {} is not a PEM private key (\"-----BEGIN ... PRIVATE "
                       "KEY-----\"); is it the certificate?",
                       file);
  }
  if (text.find("ENCRYPTED") != std::string_view::npos) {
    return util::format("client key file {} is encrypted; dbcheck gives libpq no passphrase: "
                       "store it decrypted, as the key's owner (sudo -u OWNER openssl pkey -in KEY "
                       "-out NEW; then chmod 600 NEW), so the checks can still read it",
                       file);
  }
  return std::nullopt;
}

} // namespace dbcheck::config
