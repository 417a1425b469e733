#pragma once
// A file descriptor closed on every path out of the scope that owns it. Header-only.

#include <unistd.h>

#include <utility>

namespace dbcheck::util {

// Owns one descriptor, or none (-1); move-only, so exactly one owner closes it.
class OwnedFd {
public:
  // --- Interface ---

  // Owns nothing.
  OwnedFd() = default;
  // Owns `fd`; a negative `fd` is none, so a failed open's result may go straight in.
  explicit OwnedFd(int fd) : m_fd(fd) {}
  // Takes `other`'s descriptor; `other` owns none after.
  OwnedFd(OwnedFd&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}
  // Closes the descriptor owned here, then takes `other`'s.
  OwnedFd& operator=(OwnedFd&& other) noexcept {
    if (this != &other) {
      close_owned();
      m_fd = std::exchange(other.m_fd, -1);
    }
    return *this;
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  // Closes the descriptor, if one is owned.
  ~OwnedFd() { close_owned(); }

  // The descriptor, still owned here (-1 for none).
  int get() const { return m_fd; }
  // The descriptor, no longer owned here: the caller closes it (-1 for none).
  int release() { return std::exchange(m_fd, -1); }

private:
  void close_owned() {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
  }

  int m_fd = -1;
};

} // namespace dbcheck::util
