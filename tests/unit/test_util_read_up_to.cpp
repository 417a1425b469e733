#include "dbcheck_catch.hpp"

#include <util/read_up_to.hpp>

#include <unistd.h>

#include <cerrno>
#include <string>

using dbcheck::util::read_up_to;

namespace {

// A pipe holding `text`, its write end closed: reads see `text`, then end of file.
int pipe_with(const std::string& text) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  return fds[0];
}

} // namespace

TEST_CASE("reads stop at the end of the file or at the cap", "[util][read_up_to]") {
  std::string buf(8, '\0');
  int fd = pipe_with("abc");
  CHECK(read_up_to(fd, buf.data(), buf.size()) == std::optional<std::size_t>{3});
  CHECK(buf.substr(0, 3) == "abc");
  ::close(fd);

  fd = pipe_with("0123456789");
  CHECK(read_up_to(fd, buf.data(), buf.size()) == std::optional<std::size_t>{8});
  CHECK(buf == "01234567");
  ::close(fd);
}

TEST_CASE("a failed read is nullopt with read's errno", "[util][read_up_to]") {
  char buf[4];
  errno = 0;
  CHECK_FALSE(read_up_to(-1, buf, sizeof buf).has_value());
  CHECK(errno == EBADF);
}
