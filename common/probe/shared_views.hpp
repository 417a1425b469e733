#pragma once
// Patroni views shared between the checks of one host, as files in a directory only this user
// can reach (core/shared_view.hpp says when one may be used).

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace dbcheck::probe {

// A majority's view of a Patroni cluster, as one check kept it for the next ones.
struct SharedView {
  std::string body;           // the GET /cluster answer of the first member of the majority
  std::size_t agreeing = 0;   // members that named its leader
  std::size_t configured = 0; // members configured
  long pid = 0;               // the check that asked the members (set when read)
  double age_ms = 0;          // its age when read (set when read)
  // When writing: how long before the write the members were asked (the file is stamped with
  // the time of asking, so its age never understates the view's).
  std::chrono::nanoseconds asked_before{0};
};

// Where and for how long a cluster's views are shared (shared_view_dir, shared_view_max_age).
struct ShareSettings {
  std::string dir;                      // empty: the default, /tmp/dbcheck-shared-<euid>
  std::chrono::milliseconds max_age{0}; // 0: views are not shared
  bool reuse = true;                    // false: ask live, but keep what is elected
  bool automatic = false;               // max_age was taken from the checks' own cadence

  // These settings with the members asked live (a view that was set aside); still shared.
  ShareSettings asked_live() const { return ShareSettings{dir, max_age, false, automatic}; }
};

// --- Interface ---

// The directory `settings` names, its default filled in.
std::string shared_view_dir(const ShareSettings& settings);

// The view kept as `key` in `dir` when it is fresh at `max_age`; nullopt when there is none,
// it is stale or unreadable, or the file or the directory is not safely this user's (another
// owner, open to group or others, a symbolic link, not a regular file).
std::optional<SharedView> read_shared_view(const std::string& dir, const std::string& key,
                                           std::chrono::milliseconds max_age);

// Marks that a check kept as `key` (core::check_mark_key) starts now: the monotonic clock,
// written into "<key>.mark" in `dir` (the file created 0600, the directory 0700, when missing).
// Returns the time since the mark before it, by the monotonic clock; nullopt when there was
// none, the file's modification times disagree with it by over a second (another boot, a
// clock step), or the file or the directory is not safely this user's. Never throws.
std::optional<std::chrono::nanoseconds> mark_check(const std::string& dir, const std::string& key);

// Keeps `view` as `key` in `dir` (created 0700 when missing), replacing the one before in one
// step (rename); does nothing when the directory is not safely this user's. Never throws.
void write_shared_view(const std::string& dir, const std::string& key, const SharedView& view);

} // namespace dbcheck::probe
