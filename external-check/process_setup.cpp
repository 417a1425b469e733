#include "process_setup.hpp"

#include <fcntl.h>
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
