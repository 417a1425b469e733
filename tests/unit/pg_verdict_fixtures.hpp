#pragma once
// What each opinion may say, for the PostgreSQL verdict tests (test_core_pg_verdict_*.cpp): a
// two-member cluster, pg1 at 10.0.0.1 and pg2 at 10.0.0.2, as the members, the leader's own
// Patroni and the node answer it, and the observations built from those answers. A namespace of
// its own: the probe's fixtures (pg_check_fixtures.hpp) name a k_replica too.

#include <core/pg_verdict.hpp>
#include <util/format.hpp>
#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dbcheck::testing::pg_verdict {

// pg1's address: the node the writer tests check.
inline const util::HostPort k_self{"10.0.0.1", 5432};
inline constexpr core::SystemId k_sysid = 7412345678901234567ULL; // the cluster's, on every member

// A running member `name` with `role` at `host`:5432, its REST API at `host`:8008; `nlb`: tagged
// noloadbalance.
inline core::PatroniMember member(const char* name, const char* role, const char* host,
                                  bool nlb = false) {
  core::PatroniMember m;
  m.name = name;
  m.role = role;
  m.state = "running";
  m.address = util::HostPort{host, 5432};
  m.noloadbalance = nlb;
  m.api_url = util::format("http://{}:8008/patroni", host);
  return m;
}

// The view the members agree on, listing `members`.
inline core::ClusterView view_with(std::vector<core::PatroniMember> members) {
  return core::ClusterView{std::move(members), false};
}

// What the members said: the view they agree on, or why none was had.
using Manager = tl::expected<core::ClusterView, core::ProbeError>;

// Every answer of the members, by name: whom they name leader ("self" is pg1), or how they failed.
inline std::map<std::string, Manager> managers() {
  return {
      {"self",
       view_with({member("pg1", "leader", "10.0.0.1"), member("pg2", "replica", "10.0.0.2")})},
      {"other",
       view_with({member("pg1", "replica", "10.0.0.1"), member("pg2", "leader", "10.0.0.2")})},
      {"none",
       view_with({member("pg1", "replica", "10.0.0.1"), member("pg2", "replica", "10.0.0.2")})},
      {"standby", view_with({member("pg1", "standby_leader", "10.0.0.1")})},
      {"timeout",
       tl::make_unexpected(core::ProbeError{
           core::Failure::timeout, "timeout: no Patroni member answered before the deadline", ""})},
      {"network",
       tl::make_unexpected(core::ProbeError{
           core::Failure::network, "no Patroni member gave a usable answer (refused)", ""})},
      {"garbage",
       tl::make_unexpected(core::ProbeError{
           core::Failure::protocol, "no Patroni member gave a usable answer (HTTP 500)", ""})},
  };
}

// The leader's own GET /primary: its report, why it failed, or nullopt when it was not asked.
using Report = std::optional<tl::expected<core::LeaderReport, core::ProbeError>>;

// The leader's own Patroni answering GET /primary.
inline core::LeaderReport confirming(const char* role = "master", const char* state = "running",
                                     long http_status = 200) {
  return core::LeaderReport{"http://10.0.0.1:8008", http_status,
                            core::PatroniStatus{state, role, 1'700'000'000, std::nullopt, k_sysid}};
}

// Every answer of the leader's own Patroni, by name: confirming pg1 or not, or how it failed.
inline std::map<std::string, Report> leader_reports() {
  core::LeaderReport renamed = confirming("primary");
  renamed.status.name = "pg3";
  core::LeaderReport named = confirming("primary");
  named.status.name = "pg1";
  return {
      {"confirms", confirming()},
      {"confirms4", named},
      {"refused",
       tl::make_unexpected(core::ProbeError{
           core::Failure::network, "http://10.0.0.1:8008/primary: Connection refused", ""})},
      {"timeout", tl::make_unexpected(core::ProbeError{
                      core::Failure::timeout,
                      "http://10.0.0.1:8008/primary: no answer before the deadline", ""})},
      {"no lock", confirming("master", "running", 503)},
      {"http 500", confirming("master", "running", 500)},
      {"replica", confirming("replica")},
      {"stopped", confirming("master", "stopped")},
      {"renamed", renamed},
      {"not asked", std::nullopt},
  };
}

// The node's answer to the writer query, or why it failed.
using Node = tl::expected<core::NodeRole, core::ProbeError>;

// Every answer of the node to the writer query, by name: its role, or how it failed.
inline std::map<std::string, Node> writer_nodes() {
  return {
      {"rw", core::NodeRole{false, false, 3, 47, k_sysid}},
      {"recovery", core::NodeRole{true, true, 3, 47, k_sysid}},
      {"readonly", core::NodeRole{false, true, 3, 47, k_sysid}},
      {"timeout",
       tl::make_unexpected(core::ProbeError{
           core::Failure::timeout, "timeout: no answer before the deadline (connecting)", ""})},
      {"refused",
       tl::make_unexpected(core::ProbeError{core::Failure::network, "Connection refused", ""})},
      {"auth",
       tl::make_unexpected(core::ProbeError{
           core::Failure::auth,
           "28P01: FATAL: password authentication failed for user \"healthcheck\"", "28P01"})},
      {"saturated",
       tl::make_unexpected(core::ProbeError{
           core::Failure::saturated, "53300: FATAL: sorry, too many clients already", "53300"})},
      {"notready",
       tl::make_unexpected(core::ProbeError{
           core::Failure::not_ready, "57P03: FATAL: the database system is starting up", "57P03"})},
  };
}

// The writer check's observation of pg1: the answers named `manager` (managers()), `node`
// (writer_nodes()) and `report` (leader_reports()), agreed by a majority of the members.
inline core::WriterObservation writer_obs(const std::string& manager, const std::string& node,
                                          const std::string& report = "confirms") {
  return core::WriterObservation{k_self,
                                 managers().at(manager),
                                 writer_nodes().at(node),
                                 leader_reports().at(report),
                                 true,
                                 std::nullopt};
}

// pg2's address: the node the reader tests check.
inline const util::HostPort k_replica{"10.0.0.2", 5432};

// The node's answer as a replica streaming timeline 3 of the cluster; `paused`: replay paused.
inline core::ReplicaStatus streaming(bool paused = false) {
  return core::ReplicaStatus{true, true, "streaming", paused, 3, k_sysid};
}

// A lag bound of `s` seconds, the replica having replayed past the leader's sampled position.
inline core::LagEstimate lag(double s) {
  return core::LagEstimate{s, "replayed past the primary's WAL position sampled 0.004s earlier"};
}

// The members' view: pg1 leads, pg2 is `self_role`; `nlb`: pg2 is tagged noloadbalance.
inline Manager replica_view(bool nlb = false, const char* self_role = "replica") {
  return view_with(
      {member("pg1", "leader", "10.0.0.1"), member("pg2", self_role, "10.0.0.2", nlb)});
}

} // namespace dbcheck::testing::pg_verdict
