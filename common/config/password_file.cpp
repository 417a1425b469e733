#include "password_file.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string.h> // explicit_bzero
#include <vector>

namespace dbcheck::config {
namespace {

// Closes a descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
};

// Zeroes a buffer on every path out.
struct WipeOnExit {
  std::vector<char>& buf;
  ~WipeOnExit() { explicit_bzero(buf.data(), buf.size()); }
};

} // namespace

Secret::Wiped::~Wiped() {
  // The string's own buffer (heap, or inline for a short one) is zeroed before it is freed.
  explicit_bzero(text.data(), text.size());
}

const std::string& Secret::empty_text() {
  static const std::string empty;
  return empty;
}

tl::expected<Secret, std::string> read_private_file(const std::string& file, std::string_view what,
                                                    std::size_t max_bytes) {
  const Fd f{::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (f.fd < 0) {
    if (errno == ELOOP) {
      return tl::make_unexpected(fmt::format(
          "{} {} is a symbolic link; name the file itself (a link could be pointed elsewhere)",
          what, file));
    }
    return tl::make_unexpected(fmt::format("cannot read {} {}: {}", what, file, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) {
    return tl::make_unexpected(fmt::format("cannot read {} {}: {}", what, file, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return tl::make_unexpected(fmt::format("{} {} is not a regular file", what, file));
  }
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return tl::make_unexpected(fmt::format(
        "{} {} is owned by uid {}, not by this process's user (uid {}) or root; run: chown {} {}",
        what, file, st.st_uid, ::geteuid(), ::geteuid(), file));
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return tl::make_unexpected(fmt::format(
        "{} {} is accessible by group or others (mode {:04o}); run: chmod 600 {}", what, file,
        st.st_mode & 07777, file));
  }
  if (static_cast<std::size_t>(st.st_size) > max_bytes) {
    return tl::make_unexpected(fmt::format("{} {} is {} bytes, more than the {} allowed", what,
                                           file, st.st_size, max_bytes));
  }
  // One byte more than allowed, to notice a file that grew after fstat.
  std::vector<char> buf(max_bytes + 1);
  const WipeOnExit wipe{buf};
  std::size_t used = 0;
  while (used < buf.size()) {
    const ssize_t n = ::read(f.fd, buf.data() + used, buf.size() - used);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return tl::make_unexpected(
          fmt::format("cannot read {} {}: {}", what, file, std::strerror(errno)));
    }
    if (n == 0) {
      break;
    }
    used += static_cast<std::size_t>(n);
  }
  if (used > max_bytes) {
    return tl::make_unexpected(
        fmt::format("{} {} is more than the {} bytes allowed", what, file, max_bytes));
  }
  return Secret{std::string(buf.data(), used)};
}

tl::expected<Secret, std::string> read_password_file(const std::string& file) {
  auto whole = read_private_file(file, "password file", k_max_secret_file);
  if (!whole) {
    return whole;
  }
  std::string_view content = whole->reveal();
  while (!content.empty() && (content.back() == '\n' || content.back() == '\r')) {
    content.remove_suffix(1);
  }
  if (content.empty()) {
    return tl::make_unexpected(fmt::format("password file {} is empty", file));
  }
  if (content.find_first_of("\r\n") != std::string_view::npos) {
    return tl::make_unexpected(
        fmt::format("password file {} has more than one line (expected the password alone)", file));
  }
  return Secret{std::string{content}};
}

} // namespace dbcheck::config
