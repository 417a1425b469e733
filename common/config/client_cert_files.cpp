#include "client_cert_files.hpp"

#include "password_file.hpp"

#include <util/format.hpp>
#include <util/read_up_to.hpp>

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

tl::expected<std::string, std::string> read_certificate_file(const std::string& file,
                                                             std::string_view what) {
  if (auto bad = not_absolute(file, what)) {
    return tl::make_unexpected(*bad);
  }
  // Non-blocking: a FIFO put in the file's place is refused, never waited on.
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return tl::make_unexpected(
        util::format("cannot read {} {}: {}", what, file, std::strerror(errno)));
  }
  std::string text;
  struct stat st {};
  std::optional<std::string> bad;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    bad = util::format("{} {} is not a regular file", what, file);
  } else if (st.st_size > static_cast<off_t>(k_max_certificate_file)) {
    bad = util::format("{} {} is larger than {} bytes", what, file, k_max_certificate_file);
  } else {
    text.resize(static_cast<std::size_t>(st.st_size));
    const auto got = util::read_up_to(fd, text.data(), text.size());
    if (!got || *got < text.size()) {
      bad = util::format("cannot read {} {}: {}", what, file,
                         got ? "it shrank while being read" : std::strerror(errno));
    }
    // A certificate file that also holds a key others may read leaks the key.
    if (!bad && (st.st_mode & 077) != 0 && text.find("PRIVATE KEY-----") != std::string::npos) {
      bad = util::format("{} {} holds a private key and other accounts may read it: keep the "
                         "key in its own file, mode 600 (tls_key_file)",
                         what, file);
    }
  }
  ::close(fd);
  if (bad) {
    return tl::make_unexpected(*bad);
  }
  return text;
}

std::optional<std::string> certificate_file_problem(const std::string& file,
                                                    std::string_view what) {
  auto text = read_certificate_file(file, what);
  return text ? std::nullopt : std::optional<std::string>(text.error());
}

tl::expected<Secret, std::string> read_key_file(const std::string& file) {
  if (auto bad = not_absolute(file, "client key file")) {
    return tl::make_unexpected(*bad);
  }
  auto key = read_private_file(file, "client key file", k_max_key_file);
  if (!key) {
    return key;
  }
  const std::string_view text = key->reveal();
  // PEM only, and no passphrase is given: an encrypted key would fail on every connection
  // with a less telling OpenSSL error (or a prompt on a terminal).
  if (text.find("PRIVATE KEY-----") == std::string_view::npos) {
    return tl::make_unexpected(
        util::format("client key file {} is not a PEM private key (\"-----BEGIN ... PRIVATE "
                     "KEY-----\"); is it the certificate?",
                     file));
  }
  if (text.find("ENCRYPTED") != std::string_view::npos) {
    return tl::make_unexpected(util::format(
        "client key file {} is encrypted; dbcheck gives the TLS library no passphrase: "
        "store it decrypted, as the key's owner (sudo -u OWNER openssl pkey -in KEY "
        "-out NEW; then chmod 600 NEW), so the checks can still read it",
        file));
  }
  return key;
}

std::optional<std::string> key_file_problem(const std::string& file) {
  auto key = read_key_file(file);
  return key ? std::nullopt : std::optional<std::string>(key.error());
}

} // namespace dbcheck::config
