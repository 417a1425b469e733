// Each rule for reading a secret file: a clear error naming the file, never a hang.
#include <config/password_file.hpp>

#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <string>

using namespace dbcheck::config;
using dbcheck::testing::TempDir;

TEST_CASE("a password file is read from a private regular file", "[config][secret]") {
  TempDir d;
  CHECK(read_password_file(d.write("ok", "pw with spaces\r\n", 0600))->reveal() == "pw with spaces");
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

TEST_CASE("a file another user owns is refused", "[config][secret]") {
  if (::geteuid() != 0) {
    WARN("not root: cannot give the file to another user; rule not exercised");
    return;
  }
  TempDir d;
  const auto theirs = d.write("theirs", "s3cret\n", 0600);
  REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
  CHECK(read_password_file(theirs).error() ==
        "password file " + theirs +
            " is owned by uid 65534, not by this process's user (uid 0) or root; run: chown 0 " +
            theirs);
}

TEST_CASE("copies of a secret share one buffer", "[config][secret]") {
  const Secret a{std::string(64, 'p')};
  const Secret b = a; // NOLINT(performance-unnecessary-copy-initialization): the point
  CHECK(&a.reveal() == &b.reveal());
  CHECK(Secret{}.empty());
  CHECK(Secret{}.reveal().empty());
}
