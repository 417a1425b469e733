#include "dbcheck_catch.hpp"
#include "terminal_hangup.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace dbcheck::extcheck;
using Clock = std::chrono::steady_clock;

namespace {

// Hangs up from another thread's point of view: closes `fd` after `after`.
void close_later(int fd, std::chrono::milliseconds after) {
  std::thread([fd, after] {
    std::this_thread::sleep_for(after);
    ::close(fd);
  }).detach();
}

} // namespace

TEST_CASE("a pipe whose reader goes away hangs up; one still read waits the whole time",
          "[extcheck][hangup]") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  CHECK_FALSE(hung_up_before(p[1], Clock::now() + std::chrono::milliseconds{50}));
  close_later(p[0], std::chrono::milliseconds{50});
  const auto t0 = Clock::now();
  // Far beyond the close: it returns when the reader goes, not at the end of the wait.
  CHECK(hung_up_before(p[1], t0 + std::chrono::seconds{30}));
  CHECK(Clock::now() - t0 < std::chrono::seconds{20});
  ::close(p[1]);
}

TEST_CASE("a terminal whose other side closes hangs up", "[extcheck][hangup]") {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  const int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  REQUIRE(slave >= 0);
  CHECK_FALSE(hung_up_before(slave, Clock::now() + std::chrono::milliseconds{50}));
  close_later(master, std::chrono::milliseconds{50});
  const auto t0 = Clock::now();
  CHECK(hung_up_before(slave, t0 + std::chrono::seconds{30}));
  CHECK(Clock::now() - t0 < std::chrono::seconds{20});
  ::close(slave);
}

TEST_CASE("a file or /dev/null never hangs up", "[extcheck][hangup]") {
  const int null = ::open("/dev/null", O_WRONLY);
  REQUIRE(null >= 0);
  const auto t0 = Clock::now();
  CHECK_FALSE(hung_up_before(null, t0 + std::chrono::milliseconds{100}));
  CHECK(Clock::now() - t0 >= std::chrono::milliseconds{100});
  ::close(null);
}

TEST_CASE("SIGHUP ends the process with 129, even when it was ignored and blocked",
          "[extcheck][hangup]") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // What nohup and runuser hand down.
    std::signal(SIGHUP, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
    end_on_hangup();
    ::kill(::getpid(), SIGHUP);
    ::sleep(30);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 129);
}
