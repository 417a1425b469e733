// Each rule for reading a secret file: a clear error naming the file, never a hang.
#include <config/password_file.hpp>

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using namespace dbcheck::config;

namespace {

// A private scratch directory, removed afterwards.
struct Scratch {
  std::string path;
  Scratch() {
    std::string tmpl = "/tmp/dbcheck-secret-XXXXXX";
    path = ::mkdtemp(tmpl.data());
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string file(const std::string& name, const std::string& content, mode_t mode) const {
    const std::string f = path + "/" + name;
    std::ofstream(f) << content;
    ::chmod(f.c_str(), mode);
    return f;
  }
};

} // namespace

TEST_CASE("a password file is read from a private regular file", "[config][secret]") {
  Scratch d;
  CHECK(read_password_file(d.file("ok", "pw with spaces\r\n", 0600))->reveal() == "pw with spaces");
  CHECK(read_password_file(d.file("ro", "s3cret", 0400))->reveal() == "s3cret");
}

TEST_CASE("a symbolic link is refused, even to a good file", "[config][secret]") {
  Scratch d;
  const auto target = d.file("target", "s3cret\n", 0600);
  const std::string link = d.path + "/link";
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  CHECK(read_password_file(link).error() ==
        "password file " + link +
            " is a symbolic link; name the file itself (a link could be pointed elsewhere)");
}

TEST_CASE("a FIFO is refused at once, not waited on", "[config][secret]") {
  Scratch d;
  const std::string fifo = d.path + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No writer ever opens it: a blocking open or read would hang this test.
  CHECK(read_password_file(fifo).error() == "password file " + fifo + " is not a regular file");
}

TEST_CASE("a file open to group or others is refused", "[config][secret]") {
  Scratch d;
  const auto loose = d.file("loose", "s3cret\n", 0640);
  CHECK(read_password_file(loose).error() == "password file " + loose +
                                                 " is accessible by group or others (mode 0640); "
                                                 "run: chmod 600 " +
                                                 loose);
}

TEST_CASE("an oversized file is refused", "[config][secret]") {
  Scratch d;
  const auto big = d.file("big", std::string(5000, 'x'), 0600);
  CHECK(read_password_file(big).error() ==
        "password file " + big + " is 5000 bytes, more than the 4096 allowed");
  CHECK(read_password_file(d.file("edge", std::string(4096, 'x'), 0600))->reveal().size() == 4096);
}

TEST_CASE("a file another user owns is refused", "[config][secret]") {
  if (::geteuid() != 0) {
    WARN("not root: cannot give the file to another user; rule not exercised");
    return;
  }
  Scratch d;
  const auto theirs = d.file("theirs", "s3cret\n", 0600);
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
