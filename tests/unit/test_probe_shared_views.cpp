// The files that carry Patroni views between external checks (probe/shared_views.hpp): only
// this user's, only fresh, never half-written.
#include "dbcheck_catch.hpp"
#include "temp_dir.hpp"

#include <probe/shared_views.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

using namespace dbcheck;
using namespace std::chrono_literals;

namespace {

probe::SharedView sample_view() {
  probe::SharedView v;
  v.body = R"({"members": []})";
  v.agreeing = 2;
  v.configured = 3;
  return v;
}

} // namespace

TEST_CASE("a shared view is read back while fresh", "[probe][shared_view]") {
  testing::TempDir t;
  const std::string dir = t.path + "/views";
  probe::write_shared_view(dir, "patroni-1", sample_view());
  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700); // created closed to others
  REQUIRE(::stat((dir + "/patroni-1.view").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  const auto v = probe::read_shared_view(dir, "patroni-1", 2000ms);
  REQUIRE(v);
  CHECK(v->body == sample_view().body);
  CHECK(v->agreeing == 2);
  CHECK(v->configured == 3);
  CHECK(v->pid == ::getpid());
  CHECK(v->age_ms >= 0);
  CHECK_FALSE(probe::read_shared_view(dir, "patroni-2", 2000ms)); // another cluster's
  // Nothing else is left in the directory (the temporary file was renamed).
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  CHECK(files == 1);
}

TEST_CASE("a shared view older than max_age is not used", "[probe][shared_view]") {
  testing::TempDir t;
  probe::write_shared_view(t.path, "patroni-1", sample_view());
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(probe::read_shared_view(t.path, "patroni-1", 5ms));
}

TEST_CASE("a shared view another could have written is not used", "[probe][shared_view]") {
  testing::TempDir t;
  probe::write_shared_view(t.path, "patroni-1", sample_view());
  const std::string file = t.path + "/patroni-1.view";
  SECTION("the file open to the group") {
    ::chmod(file.c_str(), 0640);
    CHECK_FALSE(probe::read_shared_view(t.path, "patroni-1", 2000ms));
  }
  SECTION("the directory open to others") {
    ::chmod(t.path.c_str(), 0733);
    CHECK_FALSE(probe::read_shared_view(t.path, "patroni-1", 2000ms));
    // ...and nothing is written there either.
    probe::write_shared_view(t.path, "patroni-2", sample_view());
    CHECK_FALSE(std::filesystem::exists(t.path + "/patroni-2.view"));
    ::chmod(t.path.c_str(), 0700);
  }
  SECTION("a symbolic link in its place") {
    std::filesystem::rename(file, t.path + "/elsewhere");
    std::filesystem::create_symlink(t.path + "/elsewhere", file);
    CHECK_FALSE(probe::read_shared_view(t.path, "patroni-1", 2000ms));
  }
  SECTION("the directory a symbolic link") {
    std::filesystem::create_directory_symlink(t.path, t.path + "/link");
    CHECK_FALSE(probe::read_shared_view(t.path + "/link", "patroni-1", 2000ms));
  }
  SECTION("garbage, or a body shorter than announced") {
    t.write("patroni-1.view", "dbcheck shared view 1\nsteady_ns 1\n", 0600);
    CHECK_FALSE(probe::read_shared_view(t.path, "patroni-1", 2000ms));
  }
}

TEST_CASE("a check's mark gives the time since the one before", "[probe][shared_view]") {
  testing::TempDir t;
  const std::string dir = t.path + "/views";
  CHECK_FALSE(probe::mark_check(dir, "check-1")); // the first: none before
  struct stat st {};
  REQUIRE(::stat((dir + "/check-1.mark").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  std::this_thread::sleep_for(50ms);
  const auto since = probe::mark_check(dir, "check-1");
  REQUIRE(since);
  // The file system's clock ticks coarsely (a few ms); the sleep is a floor, not a bound.
  CHECK(*since >= 40ms);
  CHECK(*since < 60s);
  CHECK_FALSE(probe::mark_check(dir, "check-2")); // another server's checks: their own mark
}

TEST_CASE("a mark another could have written is not used", "[probe][shared_view]") {
  testing::TempDir t;
  CHECK_FALSE(probe::mark_check(t.path, "check-1"));
  const std::string file = t.path + "/check-1.mark";
  SECTION("the file open to the group") {
    ::chmod(file.c_str(), 0660);
    CHECK_FALSE(probe::mark_check(t.path, "check-1"));
  }
  SECTION("a symbolic link in its place") {
    std::filesystem::rename(file, t.path + "/elsewhere");
    std::filesystem::create_symlink(t.path + "/elsewhere", file);
    CHECK_FALSE(probe::mark_check(t.path, "check-1"));
  }
}

TEST_CASE("a mark of another boot, or not a mark, says nothing of the cadence",
          "[probe][shared_view]") {
  testing::TempDir t;
  CHECK_FALSE(probe::mark_check(t.path, "check-1"));
  SECTION("a monotonic time later than now: another boot's") {
    t.write("check-1.mark", "steady_ns 09000000000000000000\n", 0600);
    CHECK_FALSE(probe::mark_check(t.path, "check-1"));
  }
  SECTION("garbage") {
    t.write("check-1.mark", "check\n", 0600);
    CHECK_FALSE(probe::mark_check(t.path, "check-1"));
  }
  // Either way this check's own mark replaced it: the next one measures again.
  std::this_thread::sleep_for(20ms);
  const auto since = probe::mark_check(t.path, "check-1");
  REQUIRE(since);
  CHECK(*since >= 10ms);
}
