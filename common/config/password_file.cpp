#include "password_file.hpp"

#include <util/format.hpp>
#include <util/owned_fd.hpp>
#include <util/read_up_to.hpp>

#include <fcntl.h>
#include <pwd.h>
#include <string.h> // explicit_bzero
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

namespace dbcheck::config {
namespace {

// Zeroes a buffer on every path out.
struct WipeOnExit {
  std::vector<char>& buf;
  ~WipeOnExit() { explicit_bzero(buf.data(), buf.size()); }
};

// A user's login name from /etc/passwd alone. NSS is not asked: a directory service could
// block, and this only decorates an error message.
std::optional<std::string> login_of(uid_t uid) {
  std::FILE* f = std::fopen("/etc/passwd", "re");
  if (f == nullptr) {
    return std::nullopt;
  }
  std::optional<std::string> name;
  while (const passwd* pw = ::fgetpwent(f)) {
    if (pw->pw_uid == uid) {
      name = pw->pw_name;
      break;
    }
  }
  std::fclose(f);
  return name;
}

// "haproxy (uid 105)", or "uid 105" for a uid /etc/passwd does not name.
std::string user_name(uid_t uid) {
  const auto login = login_of(uid);
  return login ? util::format("{} (uid {})", *login, uid) : util::format("uid {}", uid);
}

// What `sudo -u` takes for this uid, as a shell reads it: its login, else sudo's '#N' (quoted:
// a bare # starts a comment).
std::string sudo_user(uid_t uid) {
  return login_of(uid).value_or(util::format("'#{}'", uid));
}

// The advice when the file's owner is not this process's user: run as root or as the owner.
// Changing the owner is never suggested: HAProxy's checks read the file as its present owner,
// and a chown for a hand-run command would take every server DOWN.
std::string run_as_owner(uid_t owner) {
  return util::format("belongs to {}, and this process runs as {}: run this command as root or as "
                      "that user (e.g. sudo -u {} ...); the checks HAProxy runs read it as their "
                      "own user, who must own it",
                      user_name(owner), user_name(::geteuid()), sudo_user(owner));
}

// Why a file this process may not open can still be used (none when it cannot be stat'ed).
std::string not_permitted_hint(const std::string& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || st.st_uid == ::geteuid()) {
    return "";
  }
  return "; it " + run_as_owner(st.st_uid);
}

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
  const util::OwnedFd f{
      ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (f.get() < 0) {
    if (errno == ELOOP) {
      return tl::make_unexpected(util::format(
          "{} {} is a symbolic link; name the file itself (a link could be pointed elsewhere)",
          what, file));
    }
    const int err = errno;
    return tl::make_unexpected(util::format("cannot read {} {}: {}{}", what, file,
                                            std::strerror(err),
                                            err == EACCES ? not_permitted_hint(file) : ""));
  }
  struct stat st {};
  if (::fstat(f.get(), &st) != 0) {
    return tl::make_unexpected(
        util::format("cannot read {} {}: {}", what, file, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return tl::make_unexpected(util::format("{} {} is not a regular file", what, file));
  }
  // Root may read a file any user owns (the operator running dbcheck by hand reads the file
  // HAProxy's user owns); anyone else only their own or root's, so no other account can choose
  // what they send.
  if (::geteuid() != 0 && st.st_uid != ::geteuid() && st.st_uid != 0) {
    return tl::make_unexpected(util::format("{} {} {}", what, file, run_as_owner(st.st_uid)));
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return tl::make_unexpected(
        util::format("{} {} is accessible by group or others (mode {:04o}); run: chmod 600 {}",
                     what, file, st.st_mode & 07777, file));
  }
  if (static_cast<std::size_t>(st.st_size) > max_bytes) {
    return tl::make_unexpected(util::format("{} {} is {} bytes, more than the {} allowed", what,
                                            file, st.st_size, max_bytes));
  }
  // One byte more than allowed, to notice a file that grew after fstat.
  std::vector<char> buf(max_bytes + 1);
  const WipeOnExit wipe{buf};
  const auto got = util::read_up_to(f.get(), buf.data(), buf.size());
  if (!got) {
    return tl::make_unexpected(
        util::format("cannot read {} {}: {}", what, file, std::strerror(errno)));
  }
  const std::size_t used = *got;
  if (used > max_bytes) {
    return tl::make_unexpected(
        util::format("{} {} is more than the {} bytes allowed", what, file, max_bytes));
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
    return tl::make_unexpected(util::format("password file {} is empty", file));
  }
  if (content.find_first_of("\r\n") != std::string_view::npos) {
    return tl::make_unexpected(util::format(
        "password file {} has more than one line (expected the password alone)", file));
  }
  return Secret{std::string{content}};
}

} // namespace dbcheck::config
