#include "write_all.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace dbcheck::util {

bool write_all(int fd, std::string_view text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

} // namespace dbcheck::util
