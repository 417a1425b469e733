#include "syslog_line.hpp"

#include <util/format.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

namespace dbcheck::extcheck {

bool send_syslog(int severity, std::string_view line) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return false;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, "/dev/log", sizeof addr.sun_path - 1);
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%b %e %H:%M:%S", &tm);
  const std::string msg =
      util::format("<{}>{} dbcheck[{}]: {}", LOG_DAEMON | severity, stamp, ::getpid(), line);
  const ssize_t n = ::sendto(fd, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                             reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  ::close(fd);
  return n == static_cast<ssize_t>(msg.size());
}

} // namespace dbcheck::extcheck
