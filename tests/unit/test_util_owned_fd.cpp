#include "dbcheck_catch.hpp"

#include <util/owned_fd.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <utility>

using dbcheck::util::OwnedFd;

namespace {

// True while `fd` names an open descriptor of this process.
bool is_open(int fd) {
  return ::fcntl(fd, F_GETFD) != -1;
}

// A fresh descriptor (the read end of a pipe whose write end is closed already).
int fresh_fd() {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ::close(fds[1]);
  return fds[0];
}

} // namespace

TEST_CASE("an owned descriptor is closed when its owner goes", "[util][owned_fd]") {
  const int fd = fresh_fd();
  {
    const OwnedFd owned{fd};
    CHECK(owned.get() == fd);
    CHECK(is_open(fd));
  }
  CHECK_FALSE(is_open(fd));
}

TEST_CASE("none owned: -1, a failed open's result, or nothing at all", "[util][owned_fd]") {
  const OwnedFd none;
  CHECK(none.get() == -1);
  const OwnedFd failed{::open("/nonexistent/owned_fd", O_RDONLY | O_CLOEXEC)};
  CHECK(failed.get() == -1);
}

TEST_CASE("release hands the descriptor over unclosed", "[util][owned_fd]") {
  const int fd = fresh_fd();
  {
    OwnedFd owned{fd};
    CHECK(owned.release() == fd);
    CHECK(owned.get() == -1);
    CHECK(owned.release() == -1);
  }
  CHECK(is_open(fd));
  ::close(fd);
}

TEST_CASE("a move leaves one owner, which alone closes", "[util][owned_fd]") {
  const int fd = fresh_fd();
  const int other = fresh_fd();
  {
    OwnedFd a{fd};
    OwnedFd b{std::move(a)};
    CHECK(a.get() == -1); // NOLINT(bugprone-use-after-move): the moved-from state is the point
    CHECK(b.get() == fd);
    OwnedFd c{other};
    c = std::move(b); // c's own descriptor is closed first
    CHECK_FALSE(is_open(other));
    CHECK(c.get() == fd);
    CHECK(is_open(fd));
  }
  CHECK_FALSE(is_open(fd));
}
