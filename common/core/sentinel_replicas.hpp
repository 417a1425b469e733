#pragma once
// The replicas the Sentinels list (SENTINEL REPLICAS), merged into the rows `dbcheck status`
// shows, and why some may be missing. Built from answers already taken (no I/O).

#include "probe_error.hpp"
#include "redis_replies.hpp"

#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <string>
#include <vector>

namespace dbcheck::core {

// One Sentinel's SENTINEL REPLICAS answer: the replicas it lists, or why it listed none.
struct ReplicaListing {
  util::HostPort sentinel;
  tl::expected<std::vector<SentinelReplica>, ProbeError> replicas;
  bool refused = false; // its ACL refused the command (NOPERM): the fix is the check user's ACL
};

// A replica as the Sentinels list it.
struct ListedReplica {
  util::HostPort addr;
  std::size_t listed_by = 0; // how many Sentinels list it
  std::string flags;         // the flags beyond "slave" any of them gives it ("s_down"), or ""
  bool link_err = false;     // one of them says its link to the master is down
};

// Every replica listed, and why the list may be short.
struct KnownReplicas {
  std::vector<ListedReplica> replicas; // by address, each once
  std::string note;                    // why replicas may be missing from the table, or ""
};

// --- Interface ---

// The replicas any Sentinel lists (a Sentinel listing none adds none), each once, ordered by
// address so that a redrawn screen keeps its rows. The note says why the list may be short:
// Sentinels refusing the command (NOPERM) are named with the ACL rule to add; when no Sentinel
// answered at all, the first one's reason. Empty when every answering Sentinel listed.
KnownReplicas merge_replica_listings(const std::vector<ReplicaListing>& listings);

// The manager's words on a listed replica, as on the master ("master 3/3"): "replica 3/3",
// "replica 2/3 s_down", "replica 3/3 link err"; `configured`: the Sentinels configured.
std::string replica_manager_words(const ListedReplica& r, std::size_t configured);

} // namespace dbcheck::core
