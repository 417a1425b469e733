#include "read_up_to.hpp"

#include <unistd.h>

#include <cerrno>

namespace dbcheck::util {

std::optional<std::size_t> read_up_to(int fd, char* buf, std::size_t cap) {
  std::size_t used = 0;
  while (used < cap) {
    const ssize_t n = ::read(fd, buf + used, cap - used);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return std::nullopt;
    }
    if (n == 0) {
      break;
    }
    used += static_cast<std::size_t>(n);
  }
  return used;
}

} // namespace dbcheck::util
