#include "process_setup.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace dbcheck::extcheck {

void reopen_standard_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1) {
      continue;
    }
    int n = ::open("/dev/null", O_RDWR);
    if (n < 0) {
      // No /dev/null (a chroot): a directory fd takes the slot; writes to it simply fail.
      n = ::open("/", O_RDONLY | O_DIRECTORY);
    }
    if (n >= 0 && n != fd) {
      ::dup2(n, fd);
      ::close(n);
    }
  }
}

void ignore_sigpipe() {
  std::signal(SIGPIPE, SIG_IGN);
}

namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

} // namespace

void block_stop_signals() {
  const sigset_t set = stop_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

std::optional<std::string> take_stop_signal() {
  const sigset_t set = stop_signals();
  const struct timespec now {};
  // A zero timeout: takes one pending signal of the set, or returns -1 (EAGAIN) at once.
  const int sig = ::sigtimedwait(&set, nullptr, &now);
  if (sig == SIGINT) {
    return "SIGINT";
  }
  if (sig == SIGTERM) {
    return "SIGTERM";
  }
  return std::nullopt;
}

void scrub_libpq_environment() {
  std::vector<std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv{*e};
    if (kv.rfind("PG", 0) == 0) {
      names.push_back(kv.substr(0, kv.find('=')));
    }
  }
  for (const auto& n : names) {
    ::unsetenv(n.c_str());
  }
}

} // namespace dbcheck::extcheck
