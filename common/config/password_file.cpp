#include "password_file.hpp"

#include <fmt/format.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace dbcheck::config {

tl::expected<Secret, std::string> read_password_file(const std::string& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    return tl::make_unexpected(
        fmt::format("cannot read password file {}: {}", file, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return tl::make_unexpected(fmt::format("password file {} is not a regular file", file));
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return tl::make_unexpected(fmt::format(
        "password file {} is accessible by group or others (mode {:04o}); run: chmod 600 {}", file,
        st.st_mode & 07777, file));
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return tl::make_unexpected(
        fmt::format("cannot read password file {}: {}", file, std::strerror(errno)));
  }
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!content.empty() && (content.back() == '\n' || content.back() == '\r')) {
    content.pop_back();
  }
  if (content.empty()) {
    return tl::make_unexpected(fmt::format("password file {} is empty", file));
  }
  if (content.find_first_of("\r\n") != std::string::npos) {
    return tl::make_unexpected(
        fmt::format("password file {} has more than one line (expected the password alone)", file));
  }
  return Secret{std::move(content)};
}

} // namespace dbcheck::config
