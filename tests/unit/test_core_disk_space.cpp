#include "dbcheck_catch.hpp"

#include <core/disk_space.hpp>

using namespace dbcheck::core;

namespace {

constexpr std::uint64_t k_mib = 1ULL << 20;
constexpr std::uint64_t k_gib = 1ULL << 30;

DiskObservation disk(const char* what, const char* path, std::uint64_t device,
                     std::uint64_t free_bytes, std::uint64_t free_inodes = 50000) {
  return {what, path, FsSpace{path, device, free_bytes, 20 * k_gib, free_inodes, 65536}, 0.01};
}

DiskObservation unmeasurable(const char* what, const char* path, const char* why) {
  return {what, path, tl::make_unexpected(std::string{why}), 0.01};
}

const Verdict k_writer_up{State::up, Failure::none,
                          "Patroni names this node (pg1) leader; "
                          "PostgreSQL is read-write, not in recovery"};
const Verdict k_reader_up{State::up, Failure::none, "streaming replica pg2, lag <= 0.001s"};

} // namespace

TEST_CASE("a writer with room on its disks keeps its verdict", "[core][disk_space]") {
  const std::vector<DiskObservation> disks = {
      disk("data directory", "/var/lib/postgresql/17/main", 1, 5 * k_gib),
      disk("WAL directory", "/var/lib/postgresql/17/main/pg_wal", 1, 5 * k_gib),
  };
  const Verdict v = apply_disk_space(k_writer_up, true, disks, DiskPolicy{});
  CHECK(v.state == State::up);
  CHECK(v.reason == k_writer_up.reason);
  CHECK(apply_disk_space(k_writer_up, true, {}, DiskPolicy{}).reason == k_writer_up.reason);
}

TEST_CASE("a writer whose disk is nearly full is down, unwritable", "[core][disk_space]") {
  const std::vector<DiskObservation> disks = {
      disk("data directory", "/var/lib/postgresql/17/main", 1, 180 * k_mib),
      disk("WAL directory", "/var/lib/postgresql/17/main/pg_wal", 1, 180 * k_mib),
  };
  const Verdict v = apply_disk_space(k_writer_up, true, disks, DiskPolicy{});
  CHECK(v.state == State::down);
  CHECK(v.failure == Failure::unwritable);
  // One filesystem, named once.
  CHECK(v.reason == "disk nearly full: /var/lib/postgresql/17/main has 180 MiB free of 20 GiB "
                    "(min_free_space 1 GiB); " +
                        k_writer_up.reason);
}

TEST_CASE("WAL on its own filesystem is judged on its own", "[core][disk_space]") {
  DiskObservation wal = disk("WAL directory", "/var/lib/postgresql/17/main/pg_wal", 2, 10 * k_mib);
  wal.space->resolved = "/srv/wal/17";
  const std::vector<DiskObservation> disks = {
      disk("data directory", "/var/lib/postgresql/17/main", 1, 5 * k_gib),
      wal,
  };
  const Verdict v = apply_disk_space(k_writer_up, true, disks, DiskPolicy{});
  CHECK(v.failure == Failure::unwritable);
  CHECK(v.reason.rfind("disk nearly full: /srv/wal/17 (/var/lib/postgresql/17/main/pg_wal) has "
                       "10 MiB free of 20 GiB (min_free_space 1 GiB); ",
                       0) == 0);
  CHECK(describe(wal) == "10 MiB free of 20 GiB, 50000 of 65536 inodes free (/srv/wal/17)");
}

TEST_CASE("a percentage floor scales with the filesystem", "[core][disk_space]") {
  DiskPolicy policy;
  policy.min_free_space.percent = 5;
  const std::vector<DiskObservation> low = {disk("data directory", "/d", 1, 900 * k_mib)};
  const std::vector<DiskObservation> enough = {disk("data directory", "/d", 1, 2 * k_gib)};
  const Verdict v = apply_disk_space(k_writer_up, true, low, policy);
  CHECK(v.failure == Failure::unwritable);
  CHECK(v.reason.rfind("disk nearly full: /d has 900 MiB free of 20 GiB (min_free_space 5%)", 0) ==
        0);
  CHECK(apply_disk_space(k_writer_up, true, enough, policy).state == State::up);
}

TEST_CASE("a writer out of inodes is down, unwritable", "[core][disk_space]") {
  const std::vector<DiskObservation> disks = {disk("data directory", "/d", 1, 5 * k_gib, 12)};
  const Verdict v = apply_disk_space(k_writer_up, true, disks, DiskPolicy{});
  CHECK(v.failure == Failure::unwritable);
  CHECK(v.reason.rfind("disk nearly out of inodes: /d has 12 of 65536 inodes free "
                       "(min_free_inodes 1000); ",
                       0) == 0);
  // A filesystem that does not count inodes (btrfs reports 0 of 0) is judged on bytes only.
  DiskObservation btrfs = disk("data directory", "/d", 1, 5 * k_gib, 0);
  btrfs.space->total_inodes = 0;
  CHECK(apply_disk_space(k_writer_up, true, {btrfs}, DiskPolicy{}).state == State::up);
}

TEST_CASE("a disk that cannot be measured fails a writer closed", "[core][disk_space]") {
  const std::vector<DiskObservation> disks = {
      disk("data directory", "/d", 1, 5 * k_gib),
      unmeasurable("WAL directory", "/d/pg_wal", "Permission denied"),
  };
  const Verdict v = apply_disk_space(k_writer_up, true, disks, DiskPolicy{});
  CHECK(v.state == State::down);
  CHECK(v.failure == Failure::config);
  CHECK(v.reason.rfind(
            "cannot measure free space of /d/pg_wal (WAL directory): Permission denied; ", 0) == 0);
  // Low and unmeasurable together: the low disk decides the class.
  const std::vector<DiskObservation> both = {
      disk("data directory", "/d", 1, 5 * k_mib),
      unmeasurable("WAL directory", "/d/pg_wal", "Permission denied"),
  };
  CHECK(apply_disk_space(k_writer_up, true, both, DiskPolicy{}).failure == Failure::unwritable);
  // Not asked because the check ran out of time: a timeout, not a configuration problem.
  std::vector<DiskObservation> late = {
      unmeasurable("data directory", "/d", "the check's deadline passed before it was asked")};
  late.front().out_of_time = true;
  CHECK(apply_disk_space(k_writer_up, true, late, DiskPolicy{}).failure == Failure::timeout);
}

TEST_CASE("a writer already down keeps its class, the disk joins the reason",
          "[core][disk_space]") {
  const Verdict not_writer{State::down, Failure::role, "not the writer: Patroni names pg2 leader"};
  const std::vector<DiskObservation> disks = {disk("data directory", "/d", 1, 5 * k_mib)};
  const Verdict v = apply_disk_space(not_writer, true, disks, DiskPolicy{});
  CHECK(v.state == State::down);
  CHECK(v.failure == Failure::role);
  CHECK(v.reason == "not the writer: Patroni names pg2 leader; disk nearly full: /d has 5 MiB "
                    "free of 20 GiB (min_free_space 1 GiB)");
}

TEST_CASE("a reader's verdict stays as lag decides, the disk shows in the reason",
          "[core][disk_space]") {
  const std::vector<DiskObservation> disks = {disk("data directory", "/d", 1, 5 * k_mib)};
  const Verdict v = apply_disk_space(k_reader_up, false, disks, DiskPolicy{});
  CHECK(v.state == State::up);
  CHECK(v.failure == Failure::none);
  CHECK(v.reason == "streaming replica pg2, lag <= 0.001s; disk nearly full: /d has 5 MiB free "
                    "of 20 GiB (min_free_space 1 GiB)");
  const std::vector<DiskObservation> hidden = {
      unmeasurable("data directory", "/d", "No such file or directory")};
  CHECK(apply_disk_space(k_reader_up, false, hidden, DiskPolicy{}).state == State::up);
}

TEST_CASE("a saturated writer kept up is still taken out by a full disk", "[core][disk_space]") {
  const Verdict saturated{State::up, Failure::saturated, "saturated: ..."};
  const std::vector<DiskObservation> disks = {disk("data directory", "/d", 1, 5 * k_mib)};
  const Verdict v = apply_disk_space(saturated, true, disks, DiskPolicy{});
  CHECK(v.state == State::down);
  CHECK(v.failure == Failure::unwritable);
}
