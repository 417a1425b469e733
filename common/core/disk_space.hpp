#pragma once
// A PostgreSQL writer whose disk is nearly full: the free space and inodes of the data and WAL
// filesystems, measured by the agent on the node (probe/disk_space.hpp), against thresholds.
// Pure: the measurements arrive as numbers.

#include "verdict.hpp"

#include <tl/expected.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dbcheck::core {

// The least free space a filesystem must keep: bytes, or a share of its size.
struct SpaceFloor {
  std::uint64_t bytes = 1ULL << 30; // max_wal_size's default: room for a checkpoint's WAL
  std::optional<double> percent;    // when set, the floor is this share of the size instead
};

// The thresholds of one cluster (min_free_space, min_free_inodes).
struct DiskPolicy {
  SpaceFloor min_free_space;
  std::uint64_t min_free_inodes = 1000;
};

// What statvfs(2) said of the filesystem holding one path.
struct FsSpace {
  std::string resolved;           // the path with its symbolic links followed
  std::uint64_t device = 0;       // st_dev: two paths on one filesystem share it
  std::uint64_t free_bytes = 0;   // available to an unprivileged user (f_bavail)
  std::uint64_t total_bytes = 0;  // the filesystem's size
  std::uint64_t free_inodes = 0;  // available to an unprivileged user (f_favail)
  std::uint64_t total_inodes = 0; // 0: the filesystem does not count inodes (btrfs)
};

// One path measured: the data directory or its pg_wal.
struct DiskObservation {
  std::string what;                         // "data directory", "WAL directory"
  std::string path;                         // as configured (pg_wal under data_directory)
  tl::expected<FsSpace, std::string> space; // or the OS's reason ("Permission denied")
  double latency_ms = 0;
  bool out_of_time = false; // not asked: the check's deadline had passed
};

// --- Interface ---

// The verdict of a PostgreSQL check on the node, with its disks judged. No observation (no
// data_directory): `verdict` unchanged. A filesystem below min_free_space or min_free_inodes,
// or one that cannot be measured, is named in the reason, led by "disk nearly full: PATH has
// 180 MiB free of 20 GiB (min_free_space 1 GiB)" or "cannot measure free space of PATH: ...".
// A writer that passed becomes down: unwritable for a low disk, config for one that cannot be
// measured (the check was told to guard it and cannot: fail closed). A reader keeps its state
// (a replica that cannot replay is caught by lag): the reason only gains the finding.
// A path on the same filesystem as one before it (pg_wal not a link) is judged once.
Verdict apply_disk_space(Verdict verdict, bool writer, const std::vector<DiskObservation>& disks,
                         const DiskPolicy& policy);

// One observation in a few words, for its step: "180 MiB free of 20 GiB, 5000 of 65536 inodes
// free (/srv/wal)", or the error.
std::string describe(const DiskObservation& disk);

// The floor as written back: "1 GiB", "5%".
std::string to_string(const SpaceFloor& floor);

} // namespace dbcheck::core
