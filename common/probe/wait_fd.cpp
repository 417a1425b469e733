#include "wait_fd.hpp"

#include <poll.h>

#include <cerrno>

namespace dbcheck::probe {

Wait wait_fd(int fd, short events, const Deadline& deadline) {
  for (;;) {
    if (deadline.expired()) {
      return Wait::timeout;
    }
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, deadline.remaining_ms());
    if (rc > 0) {
      return Wait::ready;
    }
    if (rc < 0 && errno != EINTR) {
      return Wait::error;
    }
    // rc == 0 or EINTR: the loop re-checks the deadline (poll may wake a little early).
  }
}

} // namespace dbcheck::probe
