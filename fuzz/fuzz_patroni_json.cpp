// core/patroni_cluster: the body of Patroni's GET /cluster -> ClusterView -> the writer and
// reader verdicts it leads to (with a node that agrees, so Patroni's opinion decides).
#include "fuzz_check.hpp"

#include <core/patroni_cluster.hpp>
#include <core/patroni_election.hpp>
#include <core/pg_verdict.hpp>

using dbcheck::fuzz::require;
using namespace dbcheck;
using namespace dbcheck::core;

namespace {

// The leader's own Patroni confirming it: GET /primary 200, running primary.
LeaderReport confirming() {
  return LeaderReport{"", 200, PatroniStatus{"running", "primary", std::nullopt, std::nullopt}};
}

// Patroni alone decides here: the node is read-write (writer) or a streaming replica, and a
// leader's own Patroni confirms it.
void check_verdicts(const ClusterView& view, const util::HostPort& node) {
  const PatroniMember* leader = find_leader(view);
  WriterObservation w{node, view, NodeRole{false, false, std::nullopt, std::nullopt}, confirming()};
  const Verdict writer = evaluate_writer(w, SaturationPolicy::down);
  const bool named = leader != nullptr && util::same_endpoint(leader->address, node);
  require((writer.state == State::up) == named, "writer up exactly when Patroni names the node");
  require(!writer.reason.empty(), "a writer verdict says why");

  ReplicaObservation r{node, view, ReplicaStatus{true, true, "streaming", false, std::nullopt},
                       LagEstimate{0.0, "fuzz"}, std::nullopt};
  const Verdict reader = evaluate_replica(r, 1.0);
  // The leader's entry speaks for its address, even if another member shares it.
  const PatroniMember* self = named ? leader : find_member(view, node);
  const bool serves = self != nullptr && !is_leader_role(self->role) && !self->noloadbalance;
  require((reader.state == State::up) == serves,
          "reader up exactly when Patroni lists the node, not as leader, not noloadbalance");
  require(!(writer.state == State::up && reader.state == State::up), "never writer and reader");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const auto view = parse_patroni_cluster(dbcheck::fuzz::as_text(data, size));
  if (!view) {
    require(!view.error().empty(), "a refusal says why");
    return 0;
  }
  for (const PatroniMember& m : view->members) {
    require(!m.role.empty(), "a listed member has a role");
    require(!m.address.host.empty() && m.address.port != 0, "a listed member has an address");
    require(find_member(*view, m.address) != nullptr, "every member is found by its address");
  }
  if (const PatroniMember* leader = find_leader(*view)) {
    require(is_leader_role(leader->role), "the leader holds a leader role");
  } else {
    for (const PatroniMember& m : view->members) {
      require(!is_leader_role(m.role), "no leader found means no member has a leader role");
    }
  }
  // Members agreeing on this view elect its leader; one member alone against two that name
  // nobody does not.
  ClusterView nobody;
  const auto two = elect_leader({{"a", *view}, {"b", *view}, {"c", nobody}}, 3);
  require(two.view.has_value() && two.agreeing >= 2, "two of three agreeing decide");
  const auto one = elect_leader({{"a", *view}, {"b", nobody}, {"c", nobody}}, 3);
  require(one.view.has_value(), "two members naming nobody decide");
  require(find_leader(*one.view) == nullptr || find_leader(*view) == nullptr,
          "a lone member does not name the leader against two");
  require(election_decided({{"a", *view}, {"b", *view}}, 3), "two of three configured decide");
  check_verdicts(*view, util::HostPort{"10.0.0.1", 5432});
  for (const PatroniMember& m : view->members) {
    check_verdicts(*view, m.address);
  }
  return 0;
}
