#include "disk_space.hpp"

#include <util/byte_size.hpp>
#include <util/format.hpp>

#include <algorithm>

namespace dbcheck::core {
namespace {

// The bytes `floor` asks of a filesystem of `total` bytes.
std::uint64_t floor_bytes(const SpaceFloor& floor, std::uint64_t total) {
  if (floor.percent) {
    return static_cast<std::uint64_t>(static_cast<double>(total) * *floor.percent / 100.0);
  }
  return floor.bytes;
}

// The path as people know it: the configured one, and where a link led when elsewhere.
std::string where(const DiskObservation& d) {
  if (d.space && d.space->resolved != d.path && !d.space->resolved.empty()) {
    return util::format("{} ({})", d.space->resolved, d.path);
  }
  return d.path;
}

// What is wrong with one filesystem, or nothing.
std::optional<std::string> problem(const DiskObservation& d, const DiskPolicy& policy) {
  if (!d.space) {
    return util::format("cannot measure free space of {} ({}): {}", d.path, d.what,
                        d.space.error());
  }
  const FsSpace& s = *d.space;
  if (s.free_bytes < floor_bytes(policy.min_free_space, s.total_bytes)) {
    return util::format("disk nearly full: {} has {} free of {} (min_free_space {})", where(d),
                        util::format_bytes(s.free_bytes), util::format_bytes(s.total_bytes),
                        to_string(policy.min_free_space));
  }
  if (s.total_inodes != 0 && s.free_inodes < policy.min_free_inodes) {
    return util::format("disk nearly out of inodes: {} has {} of {} inodes free "
                        "(min_free_inodes {})",
                        where(d), s.free_inodes, s.total_inodes, policy.min_free_inodes);
  }
  return std::nullopt;
}

} // namespace

std::string to_string(const SpaceFloor& floor) {
  if (floor.percent) {
    return util::format("{}%", *floor.percent);
  }
  return util::format_bytes(floor.bytes);
}

std::string describe(const DiskObservation& d) {
  if (!d.space) {
    return d.space.error();
  }
  const FsSpace& s = *d.space;
  std::string out = util::format("{} free of {}", util::format_bytes(s.free_bytes),
                                 util::format_bytes(s.total_bytes));
  if (s.total_inodes != 0) {
    out += util::format(", {} of {} inodes free", s.free_inodes, s.total_inodes);
  }
  if (!s.resolved.empty() && s.resolved != d.path) {
    out += util::format(" ({})", s.resolved);
  }
  return out;
}

Verdict apply_disk_space(Verdict verdict, bool writer, const std::vector<DiskObservation>& disks,
                         const DiskPolicy& policy) {
  std::vector<std::uint64_t> seen; // the devices already judged
  std::string found;
  bool low = false;
  bool late = false;
  for (const DiskObservation& d : disks) {
    if (d.space) {
      if (std::find(seen.begin(), seen.end(), d.space->device) != seen.end()) {
        continue;
      }
      seen.push_back(d.space->device);
    }
    if (auto p = problem(d, policy)) {
      low = low || d.space.has_value();
      late = late || d.out_of_time;
      found += util::format("{}{}", found.empty() ? "" : "; ", *p);
    }
  }
  if (found.empty()) {
    return verdict;
  }
  if (writer && passes(verdict)) {
    // The writer would pass while writes that extend a file fail: take it out, so HAProxy's
    // alert fires with the reason (docs/agent.md, "A writer whose disk is full").
    verdict.state = State::down;
    verdict.failure = low ? Failure::unwritable : late ? Failure::timeout : Failure::config;
    verdict.reason = util::format("{}; {}", found, verdict.reason);
    return verdict;
  }
  verdict.reason = util::format("{}; {}", verdict.reason, found);
  return verdict;
}

} // namespace dbcheck::core
