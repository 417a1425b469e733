// The record of each server's last logged line, kept between external checks
// (external-check/last_logged.hpp): only this user's, never followed through a link, never
// half-written, and anything odd reads as "nothing known" (the line is then logged).
#include "dbcheck_catch.hpp"
#include "temp_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <last_logged.hpp>

using namespace dbcheck;

namespace {

const core::LoggedLine k_line{core::State::up, core::Failure::none, 1'800'000'000'000'000'000};

std::string record_path(const std::string& dir) {
  return dir + "/" + core::logged_line_key("pg_write", "10.0.0.1:5432") + ".last";
}

} // namespace

TEST_CASE("a recorded line reads back for its server only", "[extcheck][last_logged]") {
  testing::TempDir tmp;
  const std::string dir = tmp.path + "/log";
  {
    const extcheck::LastLogged rec(dir, "pg_write", "10.0.0.1:5432");
    CHECK_FALSE(rec.read()); // none yet
    rec.write(k_line);
  }
  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(::stat(record_path(dir).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  {
    const extcheck::LastLogged rec(dir, "pg_write", "10.0.0.1:5432");
    const auto got = rec.read();
    REQUIRE(got);
    CHECK(got->state == core::State::up);
    CHECK(got->failure == core::Failure::none);
    CHECK(got->real_ns == k_line.real_ns);
    rec.write(core::LoggedLine{core::State::down, core::Failure::timeout, 7});
    CHECK(rec.read()->failure == core::Failure::timeout);
  }
  // Another server's record is another file.
  const extcheck::LastLogged other(dir, "pg_write", "10.0.0.2:5432");
  CHECK_FALSE(other.read());
  // No temporary file is left behind: two records, two locks.
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    CHECK(e.path().filename().string().front() != '.');
    ++files;
  }
  CHECK(files == 3);
}

TEST_CASE("a corrupt, foreign or oversized record means nothing is known",
          "[extcheck][last_logged]") {
  testing::TempDir tmp;
  const std::string dir = tmp.path + "/log";
  {
    const extcheck::LastLogged rec(dir, "pg_write", "10.0.0.1:5432");
    rec.write(k_line);
  }
  const auto read_now = [&] {
    const extcheck::LastLogged rec(dir, "pg_write", "10.0.0.1:5432");
    return rec.read();
  };
  REQUIRE(read_now());
  const std::string good = [&] {
    std::ifstream in(record_path(dir));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  const auto put = [&](const std::string& text, mode_t mode = 0600) {
    std::ofstream(record_path(dir), std::ios::trunc) << text;
    ::chmod(record_path(dir).c_str(), mode);
  };
  SECTION("truncated") {
    put(good.substr(0, good.size() - 3));
    CHECK_FALSE(read_now());
  }
  SECTION("an unknown state") {
    std::string text = good;
    text.replace(text.find("state up"), 8, "state on");
    put(text);
    CHECK_FALSE(read_now());
  }
  SECTION("another server's record under this name (a hash collision)") {
    std::string text = good;
    text.replace(text.find("10.0.0.1"), 8, "10.0.0.9");
    put(text);
    CHECK_FALSE(read_now());
  }
  SECTION("trailing garbage, or larger than a record") {
    put(good + "x\n");
    CHECK_FALSE(read_now());
    put(good + std::string(8192, 'x'));
    CHECK_FALSE(read_now());
  }
  SECTION("readable by others") {
    put(good, 0644);
    CHECK_FALSE(read_now());
  }
  SECTION("a symbolic link to a good record") {
    const std::string elsewhere = tmp.path + "/elsewhere";
    std::filesystem::rename(record_path(dir), elsewhere);
    std::filesystem::create_symlink(elsewhere, record_path(dir));
    CHECK_FALSE(read_now());
  }
}

TEST_CASE("a directory that is not safely ours is not used", "[extcheck][last_logged]") {
  testing::TempDir tmp;
  SECTION("open to others") {
    const std::string dir = tmp.path + "/open";
    ::mkdir(dir.c_str(), 0755);
    const extcheck::LastLogged rec(dir, "pg_write", "10.0.0.1:5432");
    rec.write(k_line);
    CHECK_FALSE(rec.read());
    CHECK_FALSE(std::filesystem::exists(record_path(dir)));
  }
  SECTION("a symbolic link to a directory of ours") {
    const std::string real = tmp.path + "/real";
    ::mkdir(real.c_str(), 0700);
    const std::string dir = tmp.path + "/link";
    std::filesystem::create_directory_symlink(real, dir);
    const extcheck::LastLogged rec(dir, "pg_write", "10.0.0.1:5432");
    rec.write(k_line);
    CHECK_FALSE(rec.read());
    CHECK(std::filesystem::is_empty(real));
  }
}

TEST_CASE("while one check holds a server's record, another knows nothing and logs",
          "[extcheck][last_logged]") {
  testing::TempDir tmp;
  const std::string dir = tmp.path + "/log";
  const extcheck::LastLogged first(dir, "pg_write", "10.0.0.1:5432");
  first.write(k_line);
  REQUIRE(first.read());
  {
    const extcheck::LastLogged second(dir, "pg_write", "10.0.0.1:5432");
    CHECK_FALSE(second.read());
    second.write(core::LoggedLine{core::State::down, core::Failure::role, 1});
  }
  CHECK(first.read()->state == core::State::up); // the second wrote nothing
}

TEST_CASE("a failure forgets the record even when another check holds the lock",
          "[extcheck][last_logged]") {
  // A failure is logged after forget(): if its own record then cannot be written, the next
  // pass must not be compared with the pass before the failure (and stay silent).
  testing::TempDir tmp;
  const std::string dir = tmp.path + "/log";
  const extcheck::LastLogged first(dir, "pg_write", "10.0.0.1:5432");
  first.write(k_line);
  {
    const extcheck::LastLogged second(dir, "pg_write", "10.0.0.1:5432");
    second.forget(); // the lock is first's: second's record of the failure is not written
    second.write(core::LoggedLine{core::State::down, core::Failure::role, 1});
  }
  CHECK_FALSE(first.read());
  struct stat st {};
  CHECK(::stat(record_path(dir).c_str(), &st) != 0);
}

TEST_CASE("the record's cost per check", "[.][extcheck][last_logged][bench]") {
  // What a quiet pass costs: open and lock the record, read it, close (no write). Run by
  // hand: unit_tests "[bench]".
  testing::TempDir tmp;
  const std::string dir = tmp.path + "/log";
  {
    const extcheck::LastLogged rec(dir, "pg_write", "10.0.0.1:5432");
    rec.write(k_line);
  }
  constexpr int k_rounds = 20000;
  const auto start = std::chrono::steady_clock::now();
  int known = 0;
  for (int i = 0; i < k_rounds; ++i) {
    const extcheck::LastLogged rec(dir, "pg_write", "10.0.0.1:5432");
    known += rec.read() ? 1 : 0;
  }
  const auto us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  CHECK(known == k_rounds);
  WARN("open, lock, read: " << us / k_rounds << " us per check over " << k_rounds);
  // What a logged line adds: the record written and renamed into place.
  const auto wrote = std::chrono::steady_clock::now();
  for (int i = 0; i < k_rounds; ++i) {
    const extcheck::LastLogged rec(dir, "pg_write", "10.0.0.1:5432");
    known += rec.read() ? 1 : 0;
    rec.write(core::LoggedLine{core::State::up, core::Failure::none, i});
  }
  const auto us_written =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - wrote).count();
  CHECK(known == 2 * k_rounds);
  WARN("open, lock, read, write: " << us_written / k_rounds << " us per check over " << k_rounds);
}
