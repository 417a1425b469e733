#include "service_manager.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

namespace dbcheck::agent {
namespace {

// A decimal environment value, or nullopt when unset or not a whole number.
std::optional<unsigned long long> number_from_env(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    return std::nullopt;
  }
  unsigned long long value = 0;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc{} || ptr != end) {
    return std::nullopt;
  }
  return value;
}

} // namespace

bool notify_service_manager(std::string_view state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr) {
    return false;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::size_t len = std::strlen(path);
  // A path, or '@' for Linux's abstract namespace (a leading NUL in the address).
  if ((path[0] != '/' && path[0] != '@') || len < 2 || len > sizeof addr.sun_path) {
    return false;
  }
  std::memcpy(addr.sun_path, path, len);
  if (path[0] == '@') {
    addr.sun_path[0] = '\0';
  }
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return false;
  }
  // The manager reads our credentials from the datagram (its socket has SO_PASSCRED).
  const auto addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  const ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                                reinterpret_cast<const sockaddr*>(&addr), addr_len);
  ::close(fd);
  return sent == static_cast<ssize_t>(state.size());
}

std::optional<std::chrono::microseconds> watchdog_interval() {
  const auto usec = number_from_env("WATCHDOG_USEC");
  if (!usec || *usec == 0) {
    return std::nullopt;
  }
  if (std::getenv("WATCHDOG_PID") != nullptr) {
    const auto owner = number_from_env("WATCHDOG_PID");
    if (!owner || *owner != static_cast<unsigned long long>(::getpid())) {
      return std::nullopt; // meant for another process (one that started us)
    }
  }
  return std::chrono::microseconds{static_cast<long long>(*usec)};
}

} // namespace dbcheck::agent
