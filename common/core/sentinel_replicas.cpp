#include "sentinel_replicas.hpp"

#include <util/format.hpp>

#include <fmt/ranges.h>

#include <algorithm>
#include <tuple>

namespace dbcheck::core {
namespace {

// Adds each comma-separated flag of `flags` but "slave" (every replica has it) to `into`,
// once.
void add_flags(std::string& into, const std::string& flags) {
  std::size_t from = 0;
  while (from <= flags.size()) {
    const std::size_t comma = std::min(flags.find(',', from), flags.size());
    const std::string flag = flags.substr(from, comma - from);
    from = comma + 1;
    if (flag.empty() || flag == "slave" || flag == "replica") {
      continue;
    }
    const std::string padded = "," + into + ",";
    if (padded.find("," + flag + ",") == std::string::npos) {
      into += (into.empty() ? "" : ",") + flag;
    }
  }
}

} // namespace

KnownReplicas merge_replica_listings(const std::vector<ReplicaListing>& listings) {
  KnownReplicas out;
  std::vector<std::string> refused;
  std::size_t answered = 0;
  const ProbeError* first_error = nullptr;
  for (const auto& l : listings) {
    if (!l.replicas) {
      if (l.refused) {
        refused.push_back(util::to_string(l.sentinel));
      } else if (first_error == nullptr) {
        first_error = &l.replicas.error();
      }
      continue;
    }
    ++answered;
    for (const auto& r : *l.replicas) {
      auto it = std::find_if(out.replicas.begin(), out.replicas.end(),
                             [&](const ListedReplica& have) { return have.addr == r.addr; });
      if (it == out.replicas.end()) {
        out.replicas.push_back({r.addr, 0, "", false});
        it = out.replicas.end() - 1;
      }
      ++it->listed_by;
      add_flags(it->flags, r.flags);
      it->link_err = it->link_err || (!r.link.empty() && r.link != "ok");
    }
  }
  std::sort(out.replicas.begin(), out.replicas.end(),
            [](const ListedReplica& a, const ListedReplica& b) {
              return std::tie(a.addr.host, a.addr.port) < std::tie(b.addr.host, b.addr.port);
            });
  if (!refused.empty()) {
    // All of them refusing is the usual case (one ACL line for every Sentinel): no list.
    const std::string which =
        refused.size() == listings.size() ? "" : util::format(" on {}", fmt::join(refused, ", "));
    const std::string what =
        answered == 0
            ? "replicas unknown"
            : util::format("replicas as {} of {} Sentinels list them", answered, listings.size());
    out.note = util::format("{}: the Sentinel user may not run SENTINEL REPLICAS{} (NOPERM); add "
                            "+sentinel|replicas to its ACL",
                            what, which);
  } else if (answered == 0 && first_error != nullptr) {
    out.note = util::format("replicas unknown: no Sentinel listed them ({})", first_error->detail);
  }
  return out;
}

std::string replica_manager_words(const ListedReplica& r, std::size_t configured) {
  std::string words = util::format("replica {}/{}", r.listed_by, configured);
  if (!r.flags.empty()) {
    words += " " + r.flags;
  }
  if (r.link_err) {
    words += " link err";
  }
  return words;
}

} // namespace dbcheck::core
