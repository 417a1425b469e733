// Each rule for reading a secret file: a clear error naming the file, never a hang.
#include "dbcheck_catch.hpp"
#include "temp_dir.hpp"

#include <config/password_file.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

using namespace dbcheck::config;
using dbcheck::testing::TempDir;

TEST_CASE("a password file is read from a private regular file", "[config][secret]") {
  TempDir d;
  CHECK(read_password_file(d.write("ok", "pw with spaces\r\n", 0600))->reveal() ==
        "pw with spaces");
  CHECK(read_password_file(d.write("ro", "s3cret", 0400))->reveal() == "s3cret");
}

TEST_CASE("a symbolic link is refused, even to a good file", "[config][secret]") {
  TempDir d;
  const auto target = d.write("target", "s3cret\n", 0600);
  const std::string link = d.path + "/link";
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  CHECK(read_password_file(link).error() ==
        "password file " + link +
            " is a symbolic link; name the file itself (a link could be pointed elsewhere)");
}

TEST_CASE("a FIFO is refused at once, not waited on", "[config][secret]") {
  TempDir d;
  const std::string fifo = d.path + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No writer ever opens it: a blocking open or read would hang this test.
  CHECK(read_password_file(fifo).error() == "password file " + fifo + " is not a regular file");
}

TEST_CASE("a file open to group or others is refused", "[config][secret]") {
  TempDir d;
  const auto loose = d.write("loose", "s3cret\n", 0640);
  CHECK(read_password_file(loose).error() == "password file " + loose +
                                                 " is accessible by group or others (mode 0640); "
                                                 "run: chmod 600 " +
                                                 loose);
}

TEST_CASE("an oversized file is refused", "[config][secret]") {
  TempDir d;
  const auto big = d.write("big", std::string(5000, 'x'), 0600);
  CHECK(read_password_file(big).error() ==
        "password file " + big + " is 5000 bytes, more than the 4096 allowed");
  CHECK(read_password_file(d.write("edge", std::string(4096, 'x'), 0600))->reveal().size() == 4096);
}

TEST_CASE("root reads a file another user owns; others are told to run as its owner",
          "[config][secret]") {
  if (::geteuid() != 0) {
    WARN("not root: cannot give the file to another user; rule not exercised");
    return;
  }
  TempDir d;
  const auto theirs = d.write("theirs", "s3cret\n", 0600);
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  CHECK(read_password_file(theirs)->reveal() == "s3cret");

  // The same file read by a third user (uid 65533), in a child that can drop root.
  REQUIRE(::chmod(d.path.c_str(), 0755) == 0);
  const auto mine = d.write("mine", "s3cret\n", 0600);
  REQUIRE(::chown(mine.c_str(), 65533, 65533) == 0);
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::setgid(65533) != 0 || ::setuid(65533) != 0) {
      ::_exit(3);
    }
    const auto refused = read_password_file(theirs);
    const auto own = read_password_file(mine);
    const std::string text = (refused ? std::string{"read"} : refused.error()) + "\n" +
                             (own ? std::string{own->reveal()} : own.error());
    const auto written = ::write(out[1], text.data(), text.size());
    ::_exit(written == static_cast<ssize_t>(text.size()) ? 0 : 4);
  }
  ::close(out[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) {
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const auto refused = text.substr(0, text.find('\n'));
  CHECK(text.substr(text.find('\n') + 1) == "s3cret");
  // Mode 0600: the child cannot open it, and is told whose it is and how to run.
  CHECK_THAT(refused, dbcheck_test::StartsWith("cannot read password file " + theirs +
                                               ": Permission denied; it belongs to "));
  CHECK_THAT(refused, dbcheck_test::Contains("this process runs as uid 65533: run this command "
                                             "as root or as that user"));
  CHECK_THAT(refused, dbcheck_test::Contains("(e.g. sudo -u '#65534' ...)") ||
                          dbcheck_test::Contains("(e.g. sudo -u nobody ...)"));
  CHECK_THAT(refused, !dbcheck_test::Contains("chown"));
}

TEST_CASE("copies of a secret share one buffer", "[config][secret]") {
  const Secret a{std::string(64, 'p')};
  const Secret b = a; // NOLINT(performance-unnecessary-copy-initialization): the point
  CHECK(&a.reveal() == &b.reveal());
  CHECK(Secret{}.empty());
  CHECK(Secret{}.reveal().empty());
}
