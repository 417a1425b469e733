#include "terminal_hangup.hpp"

#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <thread>

namespace dbcheck::extcheck {
namespace {

// Only _exit is async-signal-safe here; nothing is left to flush to a terminal that is gone.
extern "C" void on_hangup(int) {
  ::_exit(k_exit_hangup);
}

} // namespace

void end_on_hangup() {
  struct sigaction sa {};
  sa.sa_handler = on_hangup;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGHUP, &sa, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

bool hung_up_before(int fd, std::chrono::steady_clock::time_point until) {
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return false;
    }
    // No events asked: poll reports only POLLHUP/POLLERR (and POLLNVAL), which nothing
    // writable but a vanished reader or terminal raises.
    pollfd p{fd, 0, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) {
      if ((p.revents & POLLNVAL) != 0) {
        // Not open: nothing to watch, only the wait is left.
        std::this_thread::sleep_until(until);
        return false;
      }
      return true;
    }
    if (n < 0 && errno != EINTR) {
      return false;
    }
  }
}

} // namespace dbcheck::extcheck
