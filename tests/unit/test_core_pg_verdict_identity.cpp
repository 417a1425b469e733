// The system identifier in both verdicts: a node whose identifier is not its cluster's is
// another cluster's, whatever else it says; one that cannot be read is not compared, and the
// reason says so.
#include "dbcheck_catch.hpp"
#include "pg_verdict_fixtures.hpp"

#include <core/pg_verdict.hpp>

#include <string>

using namespace dbcheck::core;
using namespace dbcheck::testing::pg_verdict;

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
