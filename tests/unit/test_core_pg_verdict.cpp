// Verdict tables: every combination of the two opinions and their error kinds.
#include "dbcheck_catch.hpp"

#include <core/health_tracker.hpp>
#include <core/pg_verdict.hpp>
#include <util/format.hpp>

#include <map>

using namespace dbcheck::core;
using dbcheck::util::HostPort;

namespace {

const HostPort k_self{"10.0.0.1", 5432};
constexpr SystemId k_sysid = 7412345678901234567ULL; // the cluster's, on every member

PatroniMember member(const char* name, const char* role, const char* host, bool nlb = false) {
  PatroniMember m;
  m.name = name;
  m.role = role;
  m.state = "running";
  m.address = HostPort{host, 5432};
  m.noloadbalance = nlb;
  m.api_url = dbcheck::util::format("http://{}:8008/patroni", host);
  return m;
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

using Report = std::optional<tl::expected<LeaderReport, ProbeError>>;

// The leader's own Patroni answering GET /primary.
LeaderReport confirming(const char* role = "master", const char* state = "running",
                        long http_status = 200) {
  return LeaderReport{"http://10.0.0.1:8008", http_status,
                      PatroniStatus{state, role, 1'700'000'000, std::nullopt, k_sysid}};
}

std::map<std::string, Report> leader_reports() {
  LeaderReport renamed = confirming("primary");
  renamed.status.name = "pg3";
  LeaderReport named = confirming("primary");
  named.status.name = "pg1";
  return {
      {"confirms", confirming()},
      {"confirms4", named},
      {"refused", tl::make_unexpected(ProbeError{
                      Failure::network, "http://10.0.0.1:8008/primary: Connection refused", ""})},
      {"timeout",
       tl::make_unexpected(ProbeError{
           Failure::timeout, "http://10.0.0.1:8008/primary: no answer before the deadline", ""})},
      {"no lock", confirming("master", "running", 503)},
      {"http 500", confirming("master", "running", 500)},
      {"replica", confirming("replica")},
      {"stopped", confirming("master", "stopped")},
      {"renamed", renamed},
      {"not asked", std::nullopt},
  };
}

using Node = tl::expected<NodeRole, ProbeError>;

std::map<std::string, Node> writer_nodes() {
  return {
      {"rw", NodeRole{false, false, 3, 47, k_sysid}},
      {"recovery", NodeRole{true, true, 3, 47, k_sysid}},
      {"readonly", NodeRole{false, true, 3, 47, k_sysid}},
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

WriterObservation writer_obs(const std::string& manager, const std::string& node,
                             const std::string& report = "confirms") {
  return WriterObservation{k_self,
                           managers().at(manager),
                           writer_nodes().at(node),
                           leader_reports().at(report),
                           true,
                           std::nullopt};
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
constexpr Cell R = D_role;

const std::vector<std::string> k_columns = {"self",    "other",   "none",   "standby",
                                            "timeout", "network", "garbage"};
// Either opinion saying "not this node" wins (role) whatever the other's state: damping must
// never keep an old primary in the write pool.
const std::map<std::string, std::vector<Cell>> k_writer_table = {
    //              self    other none standby timeout network garbage
    {"rw", {U, R, R, R, D_to, D_net, D_proto}},
    {"recovery", {R, R, R, R, R, R, R}},
    {"readonly", {R, R, R, R, R, R, R}},
    {"timeout", {D_to, R, R, R, D_to, D_to, D_to}},
    {"refused", {D_net, R, R, R, D_net, D_net, D_net}},
    {"auth", {D_auth, R, R, R, D_auth, D_auth, D_auth}},
    {"saturated", {U_sat, R, R, R, D_to, D_net, D_proto}},
    {"notready", {D_nr, R, R, R, D_nr, D_nr, D_nr}},
};

} // namespace

TEST_CASE("writer: every node answer x every manager answer", "[core][verdict][writer]") {
  for (const auto& [node_name, row] : k_writer_table) {
    for (std::size_t c = 0; c < k_columns.size(); ++c) {
      CAPTURE(node_name, k_columns[c]);
      const Verdict v = evaluate_writer(writer_obs(k_columns[c], node_name), SaturationPolicy::up);
      CHECK(v.state == row[c].state);
      CHECK(v.failure == row[c].failure);
      // "not the writer" only when an opinion says so: a node that cannot be asked has not.
      CHECK((v.reason.rfind("not the writer: ", 0) == 0) == (v.failure == Failure::role));
    }
  }
}

TEST_CASE("writer: the leader's own Patroni must confirm it", "[core][verdict][writer]") {
  const std::vector<std::pair<std::string, Cell>> rows = {
      {"confirms", U}, {"confirms4", U},       {"refused", D_net}, {"timeout", D_to},
      {"no lock", R},  {"http 500", D_proto},  {"replica", R},     {"stopped", D_nr},
      {"renamed", R},  {"not asked", D_proto},
  };
  for (const auto& [report, cell] : rows) {
    CAPTURE(report);
    for (const char* node : {"rw", "saturated"}) {
      CAPTURE(node);
      const Verdict v = evaluate_writer(writer_obs("self", node, report), SaturationPolicy::up);
      const bool sat = std::string{node} == "saturated";
      CHECK(v.state == cell.state);
      CHECK(v.failure == (sat && cell.state == State::up ? Failure::saturated : cell.failure));
    }
    // A node that says it is not the primary wins over any report.
    CHECK(evaluate_writer(writer_obs("self", "recovery", report), SaturationPolicy::up).failure ==
          Failure::role);
  }
  CHECK(evaluate_writer(writer_obs("self", "rw", "no lock"), SaturationPolicy::up).reason ==
        "not the writer: Patroni names this node (pg1) leader, but its own Patroni answers GET "
        "/primary 503 (it does not hold the leader lock; role master, state running); "
        "PostgreSQL is read-write, not in recovery");
  CHECK(evaluate_writer(writer_obs("self", "rw", "refused"), SaturationPolicy::up).reason ==
        "cannot reach this node's Patroni: http://10.0.0.1:8008/primary: Connection refused "
        "(Patroni names this node (pg1) leader, unconfirmed: unmanaged leader?); PostgreSQL is "
        "read-write, not in recovery");
  CHECK(evaluate_writer(writer_obs("self", "rw", "stopped"), SaturationPolicy::up).reason ==
        "PostgreSQL not ready: its own Patroni says it is stopped (Patroni names this node (pg1) "
        "leader); PostgreSQL is read-write, not in recovery");
}

TEST_CASE("writer: a full server seen over a kept connection is saturated",
          "[core][verdict][writer]") {
  const auto full_node = NodeRole{false, false, 47, 47, k_sysid};
  const WriterObservation full{k_self, managers().at("self"), full_node, confirming()};
  const Verdict up = evaluate_writer(full, SaturationPolicy::up);
  CHECK(up.state == State::up);
  CHECK(up.failure == Failure::saturated);
  CHECK(up.reason ==
        "saturated: Patroni names this node (pg1) leader, confirmed by its own Patroni (GET "
        "/primary 200: holds the leader lock, running master); PostgreSQL is read-write but "
        "full: 47 of 47 connections in use; on_saturation=up keeps the sole writer in rotation");
  CHECK(evaluate_writer(full, SaturationPolicy::down).state == State::down);
  const WriterObservation room{k_self, managers().at("self"),
                               NodeRole{false, false, 46, 47, k_sysid}, confirming()};
  CHECK(evaluate_writer(room, SaturationPolicy::up).failure == Failure::none);
  const WriterObservation other{k_self,      managers().at("other"), full_node, std::nullopt, false,
                                std::nullopt};
  CHECK(evaluate_writer(other, SaturationPolicy::up).state == State::down);
}

TEST_CASE("writer: saturation never passes on one opinion", "[core][verdict][writer]") {
  // The node refused the check's connection (53300): only the leader's own Patroni, which
  // queries PostgreSQL over its own connection, can still say it is the primary.
  const Verdict unconfirmed =
      evaluate_writer(writer_obs("self", "saturated", "timeout"), SaturationPolicy::up);
  CHECK(unconfirmed.state == State::down);
  CHECK(unconfirmed.failure == Failure::timeout);
  const Verdict stale =
      evaluate_writer(writer_obs("self", "saturated", "no lock"), SaturationPolicy::up);
  CHECK(stale.state == State::down);
  CHECK(stale.failure == Failure::role);
}

TEST_CASE("writer: on_saturation = down ejects a saturated leader", "[core][verdict][writer]") {
  const Verdict v = evaluate_writer(writer_obs("self", "saturated"), SaturationPolicy::down);
  CHECK(v.state == State::down);
  CHECK(v.failure == Failure::saturated);
  CHECK(v.reason == "saturated: Patroni names this node (pg1) leader, confirmed by its own "
                    "Patroni (GET /primary 200: holds the leader lock, running master); "
                    "PostgreSQL full: 53300: FATAL: sorry, too many clients already; "
                    "on_saturation=down");
}

TEST_CASE("writer: reasons name both opinions", "[core][verdict][writer]") {
  const std::string confirmed =
      "Patroni names this node (pg1) leader, confirmed by its own Patroni (GET /primary 200: "
      "holds the leader lock, running master)";
  CHECK(evaluate_writer(writer_obs("self", "rw"), SaturationPolicy::up).reason ==
        confirmed + "; PostgreSQL is read-write, not in recovery");
  // The split-brain case: the old primary still says it is writable, Patroni disagrees.
  CHECK(evaluate_writer(writer_obs("other", "rw"), SaturationPolicy::up).reason ==
        "not the writer: Patroni names pg2 (10.0.0.2:5432) leader, not this node; PostgreSQL "
        "is read-write, not in recovery");
  // Patroni holds the lock, PostgreSQL has not finished promoting (patroni #3603).
  CHECK(evaluate_writer(writer_obs("self", "recovery"), SaturationPolicy::up).reason ==
        "not the writer: PostgreSQL is in recovery (a standby, or a promotion not yet "
        "finished); " +
            confirmed);
  // A node that cannot be asked has said nothing about its role: the failure leads.
  CHECK(evaluate_writer(writer_obs("self", "timeout"), SaturationPolicy::up).reason ==
        "PostgreSQL timed out: no answer before the deadline (connecting); " + confirmed);
  CHECK(evaluate_writer(writer_obs("self", "auth"), SaturationPolicy::up).reason ==
        "cannot log in to PostgreSQL: 28P01: FATAL: password authentication failed for user "
        "\"healthcheck\"; " +
            confirmed);
  CHECK(evaluate_writer(writer_obs("self", "refused"), SaturationPolicy::up).reason ==
        "cannot reach PostgreSQL: Connection refused; " + confirmed);
  CHECK(evaluate_writer(writer_obs("self", "notready"), SaturationPolicy::up).reason ==
        "PostgreSQL not ready: 57P03: FATAL: the database system is starting up; " + confirmed);
  CHECK(evaluate_writer(writer_obs("timeout", "rw"), SaturationPolicy::up).reason ==
        "Patroni timed out: no Patroni member answered before the deadline; PostgreSQL is "
        "read-write, not in recovery");
  CHECK(evaluate_writer(writer_obs("garbage", "rw"), SaturationPolicy::up).reason ==
        "unusable answer from Patroni: no Patroni member gave a usable answer (HTTP 500); "
        "PostgreSQL is read-write, not in recovery");
  CHECK(evaluate_writer(writer_obs("none", "rw"), SaturationPolicy::up).reason ==
        "not the writer: Patroni names no leader (failover in progress or DCS trouble); "
        "PostgreSQL is read-write, not in recovery");
  CHECK(evaluate_writer(writer_obs("standby", "recovery"), SaturationPolicy::up).reason ==
        "not the writer: Patroni: this node leads a standby cluster "
        "(standby_leader), not writable; PostgreSQL is in recovery (a standby, or "
        "a promotion not yet finished)");
  CHECK(evaluate_writer(writer_obs("self", "saturated"), SaturationPolicy::up).reason ==
        "saturated: " + confirmed +
            "; PostgreSQL full: 53300: FATAL: sorry, too many clients already; on_saturation=up "
            "keeps the sole writer in rotation");
  // Saturated, but Patroni could not be asked: Patroni's failure leads.
  CHECK(evaluate_writer(writer_obs("timeout", "saturated"), SaturationPolicy::up).reason ==
        "Patroni timed out: no Patroni member answered before the deadline; PostgreSQL full: "
        "53300: FATAL: sorry, too many clients already");
}

namespace {

ReplicaStatus streaming(bool paused = false) {
  return ReplicaStatus{true, true, "streaming", paused, 3, k_sysid};
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
        lag(0), 3, k_sysid, "pg1"},
       State::down,
       Failure::timeout,
       "PostgreSQL timed out: no answer before the deadline (connecting)"},
      {"node not ready",
       {k_replica, replica_view(),
        tl::make_unexpected(ProbeError{
            Failure::not_ready,
            "57P03: FATAL: the database system is not yet accepting connections", "57P03"}),
        lag(0), 3, k_sysid, "pg1"},
       State::down,
       Failure::not_ready,
       "PostgreSQL not ready: 57P03: FATAL: the database system is not yet accepting connections"},
      {"a primary",
       {k_replica, replica_view(),
        ReplicaStatus{false, false, std::nullopt, false, std::nullopt, k_sysid}, lag(0), 3, k_sysid,
        "pg1"},
       State::down,
       Failure::role,
       "PostgreSQL is not in recovery (it is a primary), not a replica"},
      {"manager down",
       {k_replica,
        tl::make_unexpected(
            ProbeError{Failure::network, "no Patroni member gave a usable answer (refused)", ""}),
        streaming(), lag(0), 3, k_sysid, "pg1"},
       State::down,
       Failure::network,
       "cannot reach Patroni: no Patroni member gave a usable answer (refused)"},
      {"not a member",
       {HostPort{"10.0.0.9", 5432}, replica_view(), streaming(), lag(0), 3, k_sysid, "pg1"},
       State::down,
       Failure::role,
       "Patroni does not list 10.0.0.9:5432 as a member of the cluster"},
      {"leader in recovery",
       {k_replica, replica_view(false, "leader"), streaming(), lag(0), 3, k_sysid, "pg1"},
       State::down,
       Failure::role,
       "Patroni names this node (pg2) leader"},
      {"noloadbalance",
       {k_replica, replica_view(true), streaming(), lag(0), 3, k_sysid, "pg1"},
       State::down,
       Failure::policy,
       "Patroni member pg2 is tagged noloadbalance"},
      {"no receiver",
       {k_replica, replica_view(),
        ReplicaStatus{true, false, std::nullopt, false, std::nullopt, k_sysid}, lag(0), 3, k_sysid,
        "pg1"},
       State::down,
       Failure::not_ready,
       "no WAL receiver is running (archive-only recovery, or the stream is down)"},
      {"receiver hidden",
       {k_replica, replica_view(),
        ReplicaStatus{true, true, std::nullopt, false, std::nullopt, k_sysid}, lag(0), 3, k_sysid,
        "pg1"},
       State::down,
       Failure::config,
       "pg_stat_wal_receiver.status is hidden from the check user: create its views with "
       "`dbcheck setup-sql postgres` (docs/sql/healthcheck-role.sql)"},
      {"receiver waiting",
       {k_replica, replica_view(),
        ReplicaStatus{true, true, "waiting", false, std::nullopt, k_sysid}, lag(0), 3, k_sysid,
        "pg1"},
       State::down,
       Failure::not_ready,
       "WAL receiver is waiting, not streaming"},
      {"other timeline",
       {k_replica, replica_view(), streaming(), lag(0), 4, k_sysid, "pg1"},
       State::down,
       Failure::not_ready,
       "replica receives timeline 3, the leader writes timeline 4"},
      {"lag unknown",
       {k_replica, replica_view(), streaming(),
        LagEstimate{
            std::nullopt,
            "primary not sampled (no leader known); no commit replayed since the replica started"},
        3, k_sysid, "pg1"},
       State::down,
       Failure::lag,
       "replica lag cannot be bounded: primary not sampled (no leader known); no commit replayed "
       "since the replica started"},
      {"lag too high",
       {k_replica, replica_view(), streaming(true),
        LagEstimate{12.3, "replay still behind the primary's WAL position after 0.785s; last "
                          "replayed commit was 12.300s ago"},
        3, k_sysid, "pg1"},
       State::down,
       Failure::lag,
       "replica lag 12.300s > max_lag 1.000s (replay still behind the primary's WAL position after "
       "0.785s; last replayed commit was 12.300s ago); replay is paused"},
      {"lag at the limit",
       {k_replica, replica_view(), streaming(), LagEstimate{1.0, "x"}, 3, k_sysid, "pg1"},
       State::up,
       Failure::none,
       "streaming replica pg2, lag <= 1.000s (max_lag 1.000s): x"},
      {"fresh",
       {k_replica, replica_view(), streaming(), lag(0.004), 3, k_sysid, "pg1"},
       State::up,
       Failure::none,
       "streaming replica pg2, lag <= 0.004s (max_lag 1.000s): replayed past the primary's WAL "
       "position sampled 0.004s earlier"},
      {"paused but idle",
       {k_replica, replica_view(), streaming(true), lag(0.004), 3, k_sysid, "pg1"},
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
  const Verdict v =
      evaluate_replica({k_replica, twice, streaming(), lag(0), 3, k_sysid, "pg1"}, 1.0);
  CHECK(v.state == State::down);
  CHECK(v.failure == Failure::role);
  CHECK(v.reason == "Patroni names this node (pg2) leader");
}

TEST_CASE("reader: readers = synchronous takes sync and quorum standbys only",
          "[core][verdict][replica]") {
  // Patroni's /read-only-sync and /read-only-quorum, without the primary (the primary as a
  // reader of last resort is HAProxy's `backup` line tracking the writer backend).
  for (const char* role : {"sync_standby", "quorum_standby"}) {
    CAPTURE(role);
    const Verdict v = evaluate_replica(
        {k_replica, replica_view(false, role), streaming(), lag(0), 3, k_sysid, "pg1"}, 1.0,
        ReaderChoice::synchronous);
    CHECK(v.state == State::up);
    CHECK_THAT(v.reason,
               dbcheck_test::StartsWith(dbcheck::util::format("streaming {} pg2, lag <= ", role)));
    // The default takes them too.
    CHECK(evaluate_replica(
              {k_replica, replica_view(false, role), streaming(), lag(0), 3, k_sysid, "pg1"}, 1.0)
              .state == State::up);
  }
  const Verdict async =
      evaluate_replica({k_replica, replica_view(), streaming(), lag(0), 3, k_sysid, "pg1"}, 1.0,
                       ReaderChoice::synchronous);
  CHECK(async.state == State::down);
  CHECK(async.failure == Failure::policy);
  CHECK(async.reason == "Patroni member pg2 is not a synchronous standby (role replica): this "
                        "backend takes synchronous and quorum standbys only (readers = "
                        "\"synchronous\")");
  // A synchronous standby still has to be within max_lag (it may be remote_write only).
  const Verdict behind = evaluate_replica(
      {k_replica, replica_view(false, "sync_standby"), streaming(), lag(2), 3, k_sysid, "pg1"}, 1.0,
      ReaderChoice::synchronous);
  CHECK(behind.state == State::down);
  CHECK(behind.failure == Failure::lag);
}

TEST_CASE("reader: nofailover and replicatefrom do not change who reads",
          "[core][verdict][replica]") {
  // nofailover only keeps a member from being promoted; a cascading replica's lag is bounded
  // against the leader's WAL position like any other (the probe samples the leader).
  PatroniMember self = member("pg2", "replica", "10.0.0.2");
  self.nofailover = true;
  self.replicatefrom = "pg3";
  const Verdict v =
      evaluate_replica({k_replica, view_with({member("pg1", "leader", "10.0.0.1"), self}),
                        streaming(), lag(0), 3, k_sysid, "pg1"},
                       1.0);
  CHECK(v.state == State::up);
}

TEST_CASE("writer: a leader name resolving to another member's address is not a writer",
          "[core][verdict][writer]") {
  // A stale /etc/hosts entry points pg1's name at pg2's host; pg2, an old primary still
  // read-write there, must not pass on Patroni's word.
  PatroniMember leader = member("pg1", "leader", "10.0.0.2");
  leader.advertised = "pg1.example";
  const Manager view = view_with({leader, member("pg2", "replica", "10.0.0.2")});
  const Verdict v = evaluate_writer(
      WriterObservation{HostPort{"10.0.0.2", 5432}, view,
                        tl::make_unexpected(ProbeError{Failure::network, "refused", ""}),
                        std::nullopt, true, std::nullopt},
      SaturationPolicy::up);
  CHECK(v.state == State::down);
  CHECK_THAT(v.reason,
             dbcheck_test::Contains("Patroni names pg1 (pg1.example = 10.0.0.2:5432) leader, "
                                    "but its name resolves to the address of member pg2"));
}

TEST_CASE("writer: the whole table through the agent's tracker", "[core][verdict][writer]") {
  // An old primary must leave at the first round that says "not this node", whatever the
  // other opinion did; only uncertainty is damped by fall.
  const Verdict was_up = evaluate_writer(writer_obs("self", "rw"), SaturationPolicy::up);
  REQUIRE(passes(was_up));
  for (const auto& [node_name, row] : k_writer_table) {
    for (std::size_t c = 0; c < k_columns.size(); ++c) {
      CAPTURE(node_name, k_columns[c]);
      const Verdict raw =
          evaluate_writer(writer_obs(k_columns[c], node_name), SaturationPolicy::up);
      HealthTracker t(TrackerPolicy{3, 2, dbcheck::util::Duration{5000}, true});
      t.observe(was_up, dbcheck::util::Duration{0});
      t.observe(raw, dbcheck::util::Duration{1000});
      if (passes(raw)) {
        CHECK(t.reported().state == State::up);
      } else if (raw.failure == Failure::role) {
        CHECK(t.reported().state == State::down);
      } else {
        CHECK(t.reported().state == State::up); // failing 1 of 2
        t.observe(raw, dbcheck::util::Duration{2000});
        CHECK(t.reported().state == State::down);
      }
    }
  }
}

TEST_CASE("writer: a round says whom the members named", "[core][verdict][writer]") {
  // The agent's rise rule follows it (core/health_tracker.hpp), whatever the node says and
  // whatever the leader's own Patroni says of itself.
  const std::map<std::string, Named> expected = {
      {"self", Named::this_node},  {"other", Named::another},   {"none", Named::nobody},
      {"standby", Named::unknown}, {"timeout", Named::unknown}, {"network", Named::unknown},
      {"garbage", Named::unknown}};
  for (const auto& [node_name, row] : k_writer_table) {
    for (const auto& [manager, who] : expected) {
      CAPTURE(node_name, manager);
      CHECK(evaluate_writer(writer_obs(manager, node_name), SaturationPolicy::up).named == who);
    }
  }
  for (const auto& [report, _] : leader_reports()) {
    CAPTURE(report);
    CHECK(evaluate_writer(writer_obs("self", "rw", report), SaturationPolicy::up).named ==
          Named::this_node);
  }
  // Agreed by members that are not more than half of those configured (the rest silent): a
  // lone stale member must not start the count, so whom it names is not known.
  for (const char* manager : {"self", "none"}) {
    CAPTURE(manager);
    WriterObservation obs = writer_obs(manager, "rw");
    obs.quorum = false;
    const Verdict v = evaluate_writer(obs, SaturationPolicy::up);
    CHECK(v.named == Named::unknown);
    CHECK(v.state == evaluate_writer(writer_obs(manager, "rw"), SaturationPolicy::up).state);
  }
  WriterObservation other = writer_obs("other", "rw");
  other.quorum = false;
  CHECK(evaluate_writer(other, SaturationPolicy::up).named == Named::another);
}

TEST_CASE("writer: a node whose system identifier is not Patroni's is another cluster's",
          "[core][verdict][writer][identity]") {
  constexpr SystemId k_other = 7398765432109876543ULL;
  for (const char* node_name : {"rw", "recovery", "readonly"}) {
    CAPTURE(node_name);
    WriterObservation obs = writer_obs("self", node_name);
    obs.node_answer->system_id = k_other;
    const Verdict v = evaluate_writer(obs, SaturationPolicy::up);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::identity); // before role: the address reaches other data
    CHECK(v.reason ==
          "identity: PostgreSQL's system identifier 7398765432109876543 is not the cluster's "
          "7412345678901234567 that Patroni (GET http://10.0.0.1:8008/primary) reports: this "
          "server line points at another cluster's node (or a data directory restored from "
          "another cluster)");
  }
  // Saturated (up under on_saturation=up) is still another cluster's node.
  WriterObservation full = writer_obs("self", "rw");
  full.node_answer->connections = 47;
  full.node_answer->system_id = k_other;
  CHECK(evaluate_writer(full, SaturationPolicy::up).failure == Failure::identity);
  // Even behind a 503 (the body still names its identifier).
  WriterObservation no_lock = writer_obs("self", "rw", "no lock");
  no_lock.node_answer->system_id = k_other;
  CHECK(evaluate_writer(no_lock, SaturationPolicy::up).failure == Failure::identity);
  // Patroni names another leader: its own Patroni is not asked, role decides.
  WriterObservation other = writer_obs("other", "rw", "not asked");
  other.node_answer->system_id = k_other;
  CHECK(evaluate_writer(other, SaturationPolicy::up).failure == Failure::role);
}

TEST_CASE("writer: an identity that cannot be read is not checked, and said so",
          "[core][verdict][writer][identity]") {
  WriterObservation denied = writer_obs("self", "rw");
  denied.node_answer->system_id.reset(); // pg_control_system() revoked from the check user
  Verdict v = evaluate_writer(denied, SaturationPolicy::up);
  CHECK(v.state == State::up);
  CHECK(v.failure == Failure::none);
  CHECK_THAT(
      v.reason,
      dbcheck_test::EndsWith(
          "PostgreSQL is read-write, not in recovery; "
          "identity not checked: pg_control_system() did not answer (revoked from the check user? "
          "GRANT EXECUTE ON FUNCTION pg_catalog.pg_control_system() TO it)"));
  WriterObservation silent = writer_obs("self", "rw");
  (*silent.leader_report)->status.system_id.reset();
  v = evaluate_writer(silent, SaturationPolicy::up);
  CHECK(v.state == State::up);
  CHECK_THAT(v.reason, dbcheck_test::EndsWith("; identity not checked: Patroni's GET /primary has "
                                              "no database_system_identifier"));
  // Matching identifiers add nothing.
  CHECK_THAT(evaluate_writer(writer_obs("self", "rw"), SaturationPolicy::up).reason,
             !dbcheck_test::Contains("identity"));
}

TEST_CASE("reader: a node whose system identifier is not the leader's is another cluster's",
          "[core][verdict][replica][identity]") {
  ReplicaStatus theirs = streaming();
  theirs.system_id = 7398765432109876543ULL;
  const std::string reason =
      "identity: PostgreSQL's system identifier 7398765432109876543 is not the cluster's "
      "7412345678901234567 that its leader pg1 (sampled) reports: this server line points at "
      "another cluster's node (or a data directory restored from another cluster)";
  Verdict v = evaluate_replica({k_replica, replica_view(), theirs, lag(0), 3, k_sysid, "pg1"}, 1.0);
  CHECK(v.state == State::down);
  CHECK(v.failure == Failure::identity);
  CHECK(v.reason == reason);
  // First, before the node's role or Patroni's list: a primary of another cluster at an
  // address Patroni does not list.
  ReplicaStatus their_primary{false, false,        std::nullopt,
                              false, std::nullopt, 7398765432109876543ULL};
  const Manager elsewhere = view_with({member("pg1", "leader", "10.0.0.1")});
  v = evaluate_replica({k_replica, elsewhere, their_primary, lag(0), 3, k_sysid, "pg1"}, 1.0);
  CHECK(v.failure == Failure::identity);
  CHECK(v.reason == reason);
}

TEST_CASE("reader: an identity that cannot be read is not checked, and said so",
          "[core][verdict][replica][identity]") {
  ReplicaStatus denied = streaming();
  denied.system_id.reset();
  Verdict v = evaluate_replica({k_replica, replica_view(), denied, lag(0), 3, k_sysid, "pg1"}, 1.0);
  CHECK(v.state == State::up);
  CHECK_THAT(
      v.reason,
      dbcheck_test::EndsWith(
          "; "
          "identity not checked: pg_control_system() did not answer (revoked from the check user? "
          "GRANT EXECUTE ON FUNCTION pg_catalog.pg_control_system() TO it)"));
  v = evaluate_replica({k_replica, replica_view(), streaming(), LagEstimate{0.5, "age only"},
                        std::nullopt, std::nullopt, ""},
                       1.0);
  CHECK(v.state == State::up);
  CHECK_THAT(v.reason, dbcheck_test::EndsWith("; identity not checked: the leader was not sampled "
                                              "with its identifier"));
}

TEST_CASE("writer: the write probe's outcome, when it was asked", "[core][pg][write_probe]") {
  const ProbeError full{Failure::unwritable,
                        "disk full: could not extend file \"base/1/2\": No space left on device",
                        "53100"};
  const ProbeError missing{
      Failure::protocol, "42P01: ERROR: relation \"dbcheck.write_probe\" does not exist", "42P01"};
  const ProbeError denied{Failure::config, "42501: ERROR: permission denied for table write_probe",
                          "42501"};
  const ProbeError locked{Failure::timeout, "55P03: ERROR: canceling statement due to lock timeout",
                          "55P03"};
  const auto [outcome, state, failure, words] = GENERATE_COPY(
      table<std::optional<tl::expected<void, ProbeError>>, State, Failure, std::string>({
          {std::nullopt, State::up, Failure::none, "PostgreSQL is read-write, not in recovery"},
          {tl::expected<void, ProbeError>{}, State::up, Failure::none,
           "extended a table (write probe, rolled back)"},
          {tl::make_unexpected(full), State::down, Failure::unwritable,
           "PostgreSQL refuses writes: disk full: could not extend file \"base/1/2\": No space "
           "left on device (write probe)"},
          {tl::make_unexpected(missing), State::down, Failure::config,
           "the write probe cannot run as configured: 42P01"},
          {tl::make_unexpected(denied), State::down, Failure::config,
           "`dbcheck setup-sql postgres` (docs/sql/healthcheck-role.sql)"},
          {tl::make_unexpected(locked), State::down, Failure::timeout,
           "PostgreSQL timed out: 55P03"},
      }));
  WriterObservation obs = writer_obs("self", "rw");
  obs.write_probe = outcome;
  const Verdict v = evaluate_writer(obs, SaturationPolicy::up);
  CAPTURE(v.reason);
  CHECK(v.state == state);
  CHECK(v.failure == failure);
  CHECK(v.reason.find(words) != std::string::npos);
}

namespace {

// No member gave its view (every GET /cluster timed out); every member's GET /primary.
WriterObservation outage_obs(const std::string& node, std::vector<OutageAnswer> answers,
                             std::optional<std::size_t> own = 0) {
  WriterObservation obs = writer_obs("timeout", node, "not asked");
  obs.quorum = false;
  obs.outage = OutageAnswers{std::move(answers), own};
  return obs;
}

OutageAnswer primary_answer(long http_status, const char* role, bool failsafe,
                            const char* url = "http://10.0.0.1:8008") {
  LeaderReport r = confirming(role, "running", http_status);
  r.url = url;
  r.status.failsafe_active = failsafe;
  return {url, r};
}

} // namespace

TEST_CASE("writer: with the DCS unreadable, Patroni's leader under failsafe keeps its writer",
          "[core][pg][writer][outage]") {
  const auto replica2 = primary_answer(503, "replica", false, "http://10.0.0.2:8008");
  SECTION("failsafe active, node read-write: up, the reason says why") {
    const Verdict v = evaluate_writer(
        outage_obs("rw", {primary_answer(200, "primary", true),
                          primary_answer(503, "replica", false, "http://10.0.0.2:8008")}),
        SaturationPolicy::up);
    CHECK(v.state == State::up);
    CHECK_THAT(v.reason, dbcheck_test::Contains("no member gives its view") &&
                             dbcheck_test::Contains("keeps this node leader without its DCS") &&
                             dbcheck_test::Contains("failsafe mode is active"));
    CHECK(v.named == Named::unknown); // no majority's view: never starts a rise count
  }
  SECTION("the node itself says recovery: the node's opinion still decides") {
    const Verdict v =
        evaluate_writer(outage_obs("recovery", {primary_answer(200, "primary", true), replica2}),
                        SaturationPolicy::up);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::role);
  }
  SECTION("its own Patroni has demoted it (503): not the writer") {
    const Verdict v = evaluate_writer(
        outage_obs("rw", {primary_answer(503, "replica", false), replica2}), SaturationPolicy::up);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::role);
    CHECK_THAT(v.reason, dbcheck_test::Contains("does not keep it leader"));
    // Every member answered and none runs a primary: the agent may count it (health_tracker).
    CHECK(v.named == Named::no_primary);
  }
  SECTION("a node of another cluster is caught by the leader's identifier") {
    auto other = outage_obs("rw", {primary_answer(200, "primary", true), replica2});
    other.node_answer->system_id = k_sysid + 1;
    const Verdict v = evaluate_writer(other, SaturationPolicy::up);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::identity);
  }
  SECTION("not asked (the members answered, or were never asked): as before, down") {
    auto none = writer_obs("timeout", "rw", "not asked");
    const Verdict v = evaluate_writer(none, SaturationPolicy::up);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::timeout);
  }
}

namespace {

// A replica's observation with no member's view: every member's GET /primary instead.
ReplicaObservation replica_outage_obs(std::vector<OutageAnswer> answers,
                                      std::optional<std::size_t> own = 1) {
  ReplicaObservation obs{
      k_replica,
      tl::make_unexpected(ProbeError{Failure::timeout, "timeout: no member answered", ""}),
      streaming(),
      lag(0.01),
      3,
      k_sysid,
      "http://10.0.0.1:8008"};
  obs.outage = OutageAnswers{std::move(answers), own};
  return obs;
}

} // namespace

TEST_CASE("reader: with the DCS unreadable, a replica is judged against the leader Patroni "
          "keeps, as its GET /replica keeps running replicas",
          "[core][pg][replica][outage]") {
  const auto kept = primary_answer(200, "primary", true);
  const auto self = primary_answer(503, "replica", false, "http://10.0.0.2:8008");
  SECTION("streaming, within max_lag: up, and the reason says the DCS cannot be read") {
    const Verdict v = evaluate_replica(replica_outage_obs({kept, self}), 1.0);
    CHECK(v.state == State::up);
    CHECK_THAT(v.reason, dbcheck_test::Contains("no member gives its view of the cluster") &&
                             dbcheck_test::Contains("failsafe mode is active") &&
                             dbcheck_test::Contains("its Patroni at http://10.0.0.2:8008"));
  }
  SECTION("over max_lag: down/lag as ever") {
    auto obs = replica_outage_obs({kept, self});
    obs.lag = lag(5);
    const Verdict v = evaluate_replica(obs, 1.0);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::lag);
  }
  SECTION("a synchronous-only backend: which standbys are synchronous is in the DCS") {
    const Verdict v =
        evaluate_replica(replica_outage_obs({kept, self}), 1.0, ReaderChoice::synchronous);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::policy);
  }
  SECTION("no member keeps a leader: nothing to measure against") {
    const auto demoted = primary_answer(503, "replica", false);
    const Verdict v = evaluate_replica(replica_outage_obs({demoted, self}), 1.0);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::lag);
    CHECK_THAT(v.reason, dbcheck_test::Contains("no member's Patroni keeps a leader"));
  }
  SECTION("which member the node is unknown: fails closed, as the writer") {
    const Verdict v = evaluate_replica(replica_outage_obs({kept, self}, std::nullopt), 1.0);
    CHECK(v.state == State::down);
    CHECK(v.failure == Failure::protocol);
    CHECK_THAT(v.reason, dbcheck_test::Contains("which member this node is cannot be told"));
  }
  SECTION("the identifiers tie the node to its member's cluster: both must be read") {
    auto hidden = replica_outage_obs({kept, self});
    hidden.node_answer->system_id.reset();
    CHECK(evaluate_replica(hidden, 1.0).failure == Failure::config);
    auto unsaid = replica_outage_obs({kept, self});
    unsaid.leader_system_id.reset();
    CHECK(evaluate_replica(unsaid, 1.0).failure == Failure::protocol);
    auto other = replica_outage_obs({kept, self});
    other.node_answer->system_id = k_sysid + 1;
    CHECK(evaluate_replica(other, 1.0).failure == Failure::identity);
  }
}
