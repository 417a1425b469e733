// The reader's verdict (evaluate_replica): each condition decides, in order, with its reason;
// which members a backend takes as readers.
#include "dbcheck_catch.hpp"
#include "pg_verdict_fixtures.hpp"

#include <core/pg_verdict.hpp>
#include <util/format.hpp>

#include <vector>

using namespace dbcheck::core;
using namespace dbcheck::testing::pg_verdict;
using dbcheck::util::HostPort;

namespace {

// One row of the reader's table: an observation and the verdict it must give.
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
