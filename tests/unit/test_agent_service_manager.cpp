// The service manager's notification protocol (agent/service_manager.hpp), against a datagram
// socket of our own standing for the manager.
#include "dbcheck_catch.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <service_manager.hpp>
#include <string>

using namespace dbcheck::agent;

namespace {

// Sets (or, with nullptr, unsets) an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* value) : name(n) {
    if (value != nullptr) {
      ::setenv(n, value, 1);
    } else {
      ::unsetenv(n);
    }
  }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

// A datagram socket bound to the abstract name `name`; -1 when it cannot be made.
int bind_abstract(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  name.copy(addr.sun_path + 1, name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    return -1;
  }
  return fd;
}

} // namespace

TEST_CASE("service_manager: a state reaches the socket $NOTIFY_SOCKET names", "[agent]") {
  const std::string name = "dbcheck-unit-notify-" + std::to_string(::getpid());
  const int fd = bind_abstract(name);
  REQUIRE(fd >= 0);
  {
    ScopedEnv env("NOTIFY_SOCKET", ("@" + name).c_str());
    CHECK(notify_service_manager("READY=1"));
    char buf[64] = {};
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    CHECK(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0) == "READY=1");
  }
  ::close(fd);
}

TEST_CASE("service_manager: without a usable $NOTIFY_SOCKET nothing is sent", "[agent]") {
  {
    ScopedEnv env("NOTIFY_SOCKET", nullptr);
    CHECK_FALSE(notify_service_manager("READY=1"));
  }
  for (const char* bad : {"", "@", "relative/path", "/nonexistent/dbcheck-notify"}) {
    ScopedEnv env("NOTIFY_SOCKET", bad);
    CHECK_FALSE(notify_service_manager("READY=1"));
  }
}

TEST_CASE("service_manager: the watchdog interval, only when it is ours", "[agent]") {
  {
    ScopedEnv usec("WATCHDOG_USEC", "10000000");
    ScopedEnv pid("WATCHDOG_PID", nullptr);
    REQUIRE(watchdog_interval());
    CHECK(watchdog_interval()->count() == 10'000'000);
  }
  {
    ScopedEnv usec("WATCHDOG_USEC", "10000000");
    ScopedEnv pid("WATCHDOG_PID", std::to_string(::getpid()).c_str());
    CHECK(watchdog_interval());
  }
  {
    ScopedEnv usec("WATCHDOG_USEC", "10000000");
    ScopedEnv pid("WATCHDOG_PID", std::to_string(::getpid() + 1).c_str()); // another process's
    CHECK_FALSE(watchdog_interval());
  }
  for (const char* bad : {"0", "", "10s", "-5"}) {
    ScopedEnv usec("WATCHDOG_USEC", bad);
    CHECK_FALSE(watchdog_interval());
  }
  ScopedEnv usec("WATCHDOG_USEC", nullptr);
  CHECK_FALSE(watchdog_interval());
}
