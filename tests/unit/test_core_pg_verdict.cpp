// Verdict tables: every combination of the two opinions and their error kinds.
#include <core/pg_verdict.hpp>

#include <catch2/catch.hpp>

#include <map>

using namespace dbcheck::core;
using dbcheck::util::HostPort;

namespace {

const HostPort k_self{"10.0.0.1", 5432};

PatroniMember member(const char* name, const char* role, const char* host, bool nlb = false) {
  return PatroniMember{name, role, "running", HostPort{host, 5432}, nlb};
}

ClusterView view_with(std::vector<PatroniMember> members) {
  return ClusterView{std::move(members), false};
}

using Manager = tl::expected<ClusterView, ProbeError>;

std::map<std::string, Manager> managers() {
  return {
      {"self",
       view_with({member("pg1", "leader", "10.0.0.1"), member("pg2", "replica", "10.0.0.2")})},
      {"other",
       view_with({member("pg1", "replica", "10.0.0.1"), member("pg2", "leader", "10.0.0.2")})},
      {"none",
       view_with({member("pg1", "replica", "10.0.0.1"), member("pg2", "replica", "10.0.0.2")})},
      {"standby", view_with({member("pg1", "standby_leader", "10.0.0.1")})},
      {"timeout",
       tl::make_unexpected(ProbeError{
           Failure::timeout, "timeout: no Patroni member answered before the deadline", ""})},
      {"network", tl::make_unexpected(ProbeError{
                      Failure::network, "no Patroni member gave a usable answer (refused)", ""})},
      {"garbage", tl::make_unexpected(ProbeError{
                      Failure::protocol, "no Patroni member gave a usable answer (HTTP 500)", ""})},
  };
}

using Node = tl::expected<NodeRole, ProbeError>;

std::map<std::string, Node> writer_nodes() {
  return {
      {"rw", NodeRole{false, false, 3, 47}},
      {"recovery", NodeRole{true, true, 3, 47}},
      {"readonly", NodeRole{false, true, 3, 47}},
      {"timeout",
       tl::make_unexpected(ProbeError{Failure::timeout,
                                      "timeout: no answer before the deadline (connecting)", ""})},
      {"refused", tl::make_unexpected(ProbeError{Failure::network, "Connection refused", ""})},
      {"auth",
       tl::make_unexpected(ProbeError{
           Failure::auth, "28P01: FATAL: password authentication failed for user \"healthcheck\"",
           "28P01"})},
      {"saturated",
       tl::make_unexpected(ProbeError{Failure::saturated,
                                      "53300: FATAL: sorry, too many clients already", "53300"})},
      {"notready",
       tl::make_unexpected(ProbeError{
           Failure::not_ready, "57P03: FATAL: the database system is starting up", "57P03"})},
  };
}

// Expected "U"/"D" + failure for node (row) x manager (column), on_saturation = up.
struct Cell {
  State state;
  Failure failure;
};
constexpr Cell U{State::up, Failure::none};
constexpr Cell D_role{State::down, Failure::role};
constexpr Cell D_to{State::down, Failure::timeout};
constexpr Cell D_net{State::down, Failure::network};
constexpr Cell D_proto{State::down, Failure::protocol};
constexpr Cell D_auth{State::down, Failure::auth};
constexpr Cell D_sat{State::down, Failure::saturated};
constexpr Cell U_sat{State::up, Failure::saturated};
constexpr Cell D_nr{State::down, Failure::not_ready};

const std::vector<std::string> k_columns = {"self",    "other",   "none",   "standby",
                                            "timeout", "network", "garbage"};
const std::map<std::string, std::vector<Cell>> k_writer_table = {
    //              self    other   none    standby timeout network garbage
    {"rw", {U, D_role, D_role, D_role, D_to, D_net, D_proto}},
    {"recovery", {D_role, D_role, D_role, D_role, D_to, D_net, D_proto}},
    {"readonly", {D_role, D_role, D_role, D_role, D_to, D_net, D_proto}},
    {"timeout", {D_to, D_to, D_to, D_to, D_to, D_to, D_to}},
    {"refused", {D_net, D_net, D_net, D_net, D_net, D_net, D_net}},
    {"auth", {D_auth, D_auth, D_auth, D_auth, D_auth, D_auth, D_auth}},
    {"saturated", {U_sat, D_role, D_role, D_role, D_to, D_net, D_proto}},
    {"notready", {D_nr, D_nr, D_nr, D_nr, D_nr, D_nr, D_nr}},
};

} // namespace

TEST_CASE("writer: every node answer x every manager answer", "[core][verdict][writer]") {
  const auto ms = managers();
  const auto ns = writer_nodes();
  for (const auto& [node_name, row] : k_writer_table) {
    for (std::size_t c = 0; c < k_columns.size(); ++c) {
      CAPTURE(node_name, k_columns[c]);
      const WriterObservation obs{k_self, ms.at(k_columns[c]), ns.at(node_name)};
      const Verdict v = evaluate_writer(obs, SaturationPolicy::up);
      CHECK(v.state == row[c].state);
      CHECK(v.failure == row[c].failure);
      CHECK_FALSE(v.reason.empty());
    }
  }
}

TEST_CASE("writer: a full server seen over a kept connection is saturated",
          "[core][verdict][writer]") {
  const WriterObservation full{k_self, managers().at("self"), NodeRole{false, false, 47, 47}};
  const Verdict up = evaluate_writer(full, SaturationPolicy::up);
  CHECK(up.state == State::up);
  CHECK(up.failure == Failure::saturated);
  CHECK(up.reason ==
        "saturated: Patroni names this node (pg1) leader; PostgreSQL is read-write but "
        "full: 47 of 47 connections in use; on_saturation=up keeps the sole writer in "
        "rotation");
  CHECK(evaluate_writer(full, SaturationPolicy::down).state == State::down);
  const WriterObservation room{k_self, managers().at("self"), NodeRole{false, false, 46, 47}};
  CHECK(evaluate_writer(room, SaturationPolicy::up).failure == Failure::none);
  const WriterObservation other{k_self, managers().at("other"), NodeRole{false, false, 47, 47}};
  CHECK(evaluate_writer(other, SaturationPolicy::up).state == State::down);
}

TEST_CASE("writer: on_saturation = down ejects a saturated leader", "[core][verdict][writer]") {
  const WriterObservation obs{k_self, managers().at("self"), writer_nodes().at("saturated")};
  const Verdict v = evaluate_writer(obs, SaturationPolicy::down);
  CHECK(v.state == State::down);
  CHECK(v.failure == Failure::saturated);
  CHECK(v.reason == "saturated: Patroni names this node (pg1) leader; PostgreSQL: 53300: FATAL: "
                    "sorry, too many clients already; on_saturation=down");
}

TEST_CASE("writer: reasons name both opinions", "[core][verdict][writer]") {
  const auto ms = managers();
  const auto ns = writer_nodes();
  CHECK(evaluate_writer({k_self, ms.at("self"), ns.at("rw")}, SaturationPolicy::up).reason ==
        "Patroni names this node (pg1) leader; PostgreSQL is read-write, not in recovery");
  // The split-brain case: the old primary still says it is writable, Patroni disagrees.
  CHECK(evaluate_writer({k_self, ms.at("other"), ns.at("rw")}, SaturationPolicy::up).reason ==
        "not the writer: Patroni names pg2 (10.0.0.2:5432) leader, not this node; PostgreSQL "
        "is read-write, not in recovery");
  // Patroni holds the lock, PostgreSQL has not finished promoting (patroni #3603).
  CHECK(evaluate_writer({k_self, ms.at("self"), ns.at("recovery")}, SaturationPolicy::up).reason ==
        "not the writer: Patroni names this node (pg1) leader; PostgreSQL is in recovery (a "
        "standby, or a promotion not yet finished)");
  CHECK(evaluate_writer({k_self, ms.at("self"), ns.at("timeout")}, SaturationPolicy::up).reason ==
        "not the writer: Patroni names this node (pg1) leader; PostgreSQL: timeout: no answer "
        "before the deadline (connecting)");
  CHECK(evaluate_writer({k_self, ms.at("none"), ns.at("rw")}, SaturationPolicy::up).reason ==
        "not the writer: Patroni names no leader (failover in progress or DCS trouble); "
        "PostgreSQL is read-write, not in recovery");
  CHECK(
      evaluate_writer({k_self, ms.at("standby"), ns.at("recovery")}, SaturationPolicy::up).reason ==
      "not the writer: Patroni: this node leads a standby cluster "
      "(standby_leader), not writable; PostgreSQL is in recovery (a standby, or "
      "a promotion not yet finished)");
  CHECK(evaluate_writer({k_self, ms.at("self"), ns.at("saturated")}, SaturationPolicy::up).reason ==
        "saturated: Patroni names this node (pg1) leader; PostgreSQL: 53300: FATAL: sorry, too "
        "many clients already; on_saturation=up keeps the sole writer in rotation");
}

namespace {

ReplicaStatus streaming(bool paused = false) {
  return ReplicaStatus{true, true, "streaming", paused, 3};
}

LagEstimate lag(double s) {
  return LagEstimate{s, "replayed past the primary's WAL position sampled 0.004s earlier"};
}

const HostPort k_replica{"10.0.0.2", 5432};

Manager replica_view(bool nlb = false, const char* self_role = "replica") {
  return view_with(
      {member("pg1", "leader", "10.0.0.1"), member("pg2", self_role, "10.0.0.2", nlb)});
}

struct ReplicaRow {
  const char* name;
  ReplicaObservation obs;
  State state;
  Failure failure;
  const char* reason;
};

} // namespace

TEST_CASE("reader: each condition decides, in order, with its reason", "[core][verdict][replica]") {
  const std::vector<ReplicaRow> rows = {
      {"node timeout",
       {k_replica, replica_view(),
        tl::make_unexpected(ProbeError{Failure::timeout,
                                       "timeout: no answer before the deadline (connecting)", ""}),
        lag(0), 3},
       State::down,
       Failure::timeout,
       "PostgreSQL: timeout: no answer before the deadline (connecting)"},
      {"node not ready",
       {k_replica, replica_view(),
        tl::make_unexpected(ProbeError{
            Failure::not_ready,
            "57P03: FATAL: the database system is not yet accepting connections", "57P03"}),
        lag(0), 3},
       State::down,
       Failure::not_ready,
       "PostgreSQL: 57P03: FATAL: the database system is not yet accepting connections"},
      {"a primary",
       {k_replica, replica_view(), ReplicaStatus{false, false, std::nullopt, false, std::nullopt},
        lag(0), 3},
       State::down,
       Failure::role,
       "PostgreSQL is not in recovery (it is a primary), not a replica"},
      {"manager down",
       {k_replica,
        tl::make_unexpected(
            ProbeError{Failure::network, "no Patroni member gave a usable answer (refused)", ""}),
        streaming(), lag(0), 3},
       State::down,
       Failure::network,
       "Patroni: no Patroni member gave a usable answer (refused)"},
      {"not a member",
       {HostPort{"10.0.0.9", 5432}, replica_view(), streaming(), lag(0), 3},
       State::down,
       Failure::role,
       "Patroni does not list 10.0.0.9:5432 as a member of the cluster"},
      {"leader in recovery",
       {k_replica, replica_view(false, "leader"), streaming(), lag(0), 3},
       State::down,
       Failure::role,
       "Patroni names this node (pg2) leader"},
      {"noloadbalance",
       {k_replica, replica_view(true), streaming(), lag(0), 3},
       State::down,
       Failure::policy,
       "Patroni member pg2 is tagged noloadbalance"},
      {"no receiver",
       {k_replica, replica_view(), ReplicaStatus{true, false, std::nullopt, false, std::nullopt},
        lag(0), 3},
       State::down,
       Failure::not_ready,
       "no WAL receiver is running (archive-only recovery, or the stream is down)"},
      {"receiver hidden",
       {k_replica, replica_view(), ReplicaStatus{true, true, std::nullopt, false, std::nullopt},
        lag(0), 3},
       State::down,
       Failure::config,
       "pg_stat_wal_receiver.status is hidden from the check user: GRANT pg_monitor to it"},
      {"receiver waiting",
       {k_replica, replica_view(), ReplicaStatus{true, true, "waiting", false, std::nullopt},
        lag(0), 3},
       State::down,
       Failure::not_ready,
       "WAL receiver is waiting, not streaming"},
      {"other timeline",
       {k_replica, replica_view(), streaming(), lag(0), 4},
       State::down,
       Failure::not_ready,
       "replica receives timeline 3, the leader writes timeline 4"},
      {"lag unknown",
       {k_replica, replica_view(), streaming(),
        LagEstimate{
            std::nullopt,
            "primary not sampled (no leader known); no commit replayed since the replica started"},
        3},
       State::down,
       Failure::lag,
       "replica lag cannot be bounded: primary not sampled (no leader known); no commit replayed "
       "since the replica started"},
      {"lag too high",
       {k_replica, replica_view(), streaming(true),
        LagEstimate{12.3, "replay still behind the primary's WAL position after 0.785s; last "
                          "replayed commit was 12.300s ago"},
        3},
       State::down,
       Failure::lag,
       "replica lag 12.300s > max_lag 1.000s (replay still behind the primary's WAL position after "
       "0.785s; last replayed commit was 12.300s ago); replay is paused"},
      {"lag at the limit",
       {k_replica, replica_view(), streaming(), LagEstimate{1.0, "x"}, 3},
       State::up,
       Failure::none,
       "streaming replica pg2, lag <= 1.000s (max_lag 1.000s): x"},
      {"fresh",
       {k_replica, replica_view(), streaming(), lag(0.004), 3},
       State::up,
       Failure::none,
       "streaming replica pg2, lag <= 0.004s (max_lag 1.000s): replayed past the primary's WAL "
       "position sampled 0.004s earlier"},
      {"paused but idle",
       {k_replica, replica_view(), streaming(true), lag(0.004), 3},
       State::up,
       Failure::none,
       "streaming replica pg2, lag <= 0.004s (max_lag 1.000s): replayed past the primary's WAL "
       "position sampled 0.004s earlier; replay is paused"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.name);
    const Verdict v = evaluate_replica(row.obs, 1.0);
    CHECK(v.state == row.state);
    CHECK(v.failure == row.failure);
    CHECK(v.reason == row.reason);
  }
}

TEST_CASE("reader: an address Patroni lists twice, once as leader, is the writer's",
          "[core][verdict][replica]") {
  // Found by fuzz/fuzz_patroni_json: find_member took the first entry (a replica) and the
  // same node passed as writer and as reader on Patroni's word.
  const Manager twice =
      view_with({member("pg2-old", "replica", "10.0.0.2"), member("pg2", "leader", "10.0.0.2")});
  const Verdict v = evaluate_replica({k_replica, twice, streaming(), lag(0), 3}, 1.0);
  CHECK(v.state == State::down);
  CHECK(v.failure == Failure::role);
  CHECK(v.reason == "Patroni names this node (pg2) leader");
}
