#pragma once
// Patroni's GET /cluster answer: the DCS's view of who is leader and who replicates.

#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dbcheck::core {

// One member as GET /cluster lists it.
struct PatroniMember {
  std::string name;
  std::string role;       // leader, replica, sync_standby, standby_leader (master/primary accepted)
  std::string state;      // running, streaming, stopped, ...
  util::HostPort address; // the member's PostgreSQL host:port as Patroni advertises it, or the
                          // one address its name resolves to (core/endpoint_names.hpp)
  bool noloadbalance = false; // tags.noloadbalance: never a reader (Patroni's /replica: 503)
  std::string api_url;        // its own REST API ("http://10.0.0.1:8008/patroni"), "" if not listed
  std::string advertised;     // the name Patroni advertised when `address` is what it resolves to
  std::string unresolved;     // why an advertised name was left unresolved (for the reason), or ""
  bool nofailover = false;    // tags.nofailover: never promoted; still a reader
  std::string replicatefrom;  // tags.replicatefrom: the member it cascades from, or ""
  std::optional<long long> timeline; // its PostgreSQL timeline as Patroni last saw it
  std::string lag; // Patroni's replication lag in bytes ("0", "16"), "unknown", or "" (none given)
};

// Which replicas a reader backend takes (its `readers` key).
enum class ReaderChoice {
  any,         // every streaming replica within max_lag (Patroni's /replica)
  synchronous, // only synchronous or quorum standbys (Patroni's /read-only-sync, /quorum)
};

// The whole answer of GET /cluster: who is in the cluster, in which role.
struct ClusterView {
  std::vector<PatroniMember> members;
  bool paused = false; // maintenance mode: Patroni will not fail over
};

// --- Interface ---

// Parses the body of GET /cluster (Patroni 3.x and 4.x). Members without host or port are
// skipped (Patroni omits them while a member has no connection address yet). Returns an error
// naming what is wrong when the body is not such a document.
tl::expected<ClusterView, std::string> parse_patroni_cluster(std::string_view body);

// True for the role spellings that mean "holds the leader lock of a read-write cluster".
bool is_leader_role(std::string_view role);

// True for the roles of a standby the leader waits for: sync_standby (synchronous_mode, 3.x and
// 4.x), quorum_standby (synchronous_mode: quorum, 4.x).
bool is_synchronous_role(std::string_view role);

// The member holding the leader lock, or nullptr when the cluster has none (failover window).
const PatroniMember* find_leader(const ClusterView& view);

// The leader of a standby cluster (role standby_leader: it replicates from a primary outside
// this cluster), or nullptr.
const PatroniMember* find_standby_leader(const ClusterView& view);

// The member whose PostgreSQL address is `node`, or nullptr when Patroni does not know it.
const PatroniMember* find_member(const ClusterView& view, const util::HostPort& node);

} // namespace dbcheck::core
