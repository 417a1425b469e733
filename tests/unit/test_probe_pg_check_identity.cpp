// The system identifier in the PostgreSQL check, through scripted peers (pg_check_fixtures.hpp):
// read with the node's own query and compared at no extra query; a check user refused
// pg_control_system() is asked again without it.
#include "dbcheck_catch.hpp"
#include "pg_check_fixtures.hpp"

#include <core/pg_rows.hpp>
#include <probe/pg_check.hpp>

#include <string>

using namespace dbcheck;
using namespace dbcheck::testing::pg_check;
using testing::FakePeers;

namespace {

constexpr const char* k_ours = "7412345678901234567";
constexpr const char* k_theirs = "7398765432109876543";

// lab(), with each node answering the identifier column: the leader `leader_id`, the replica
// `replica_id`; pg1's Patroni reports `patroni_id` in its GET /primary.
std::shared_ptr<FakePeers> identity_lab(std::string leader_id, std::string replica_id,
                                        std::string patroni_id) {
  auto f = lab({"0/3000060"});
  f->http = [patroni_id](const std::string& url) {
    if (url.ends_with("/primary")) {
      return testing::http_ok(R"({"state": "running", "role": "primary",
        "database_system_identifier": ")" +
                              patroni_id + R"(", "patroni": {"version": "4.1.4", "name": "pg1"}})");
    }
    return testing::http_ok(k_cluster);
  };
  f->pg_answers["10.0.0.1:5432"] = [leader_id](const std::string& sql) {
    if (sql == core::k_writer_sql) {
      return std::vector<probe::PgRow>{{"f", "off", "3", "47", leader_id}};
    }
    return std::vector<probe::PgRow>{{"0/3000060", "00000001", leader_id}};
  };
  f->pg_answers["10.0.0.2:5432"] = [replica_id](const std::string& sql) {
    if (sql == core::k_replica_sql) {
      return std::vector<probe::PgRow>{
          {"t", "t", "streaming", "f", "0/3000060", "0.5", "1", replica_id}};
    }
    return std::vector<probe::PgRow>{{"0/3000060", "0.5"}};
  };
  return f;
}

} // namespace

TEST_CASE("the writer compares the node's identifier with its own Patroni's, at no extra query",
          "[probe][pg][identity]") {
  auto f = identity_lab(k_ours, k_ours, k_ours);
  auto r = check(f, config::Role::primary, k_leader);
  CHECK(r.verdict.state == core::State::up);
  CHECK_THAT(r.verdict.reason, !dbcheck_test::Contains("identity"));
  CHECK(f->count("sql 10.0.0.1:5432") == 1);
  CHECK_THAT(node_step(r).answer,
             dbcheck_test::EndsWith(", system_identifier=7412345678901234567"));

  auto g = identity_lab(k_theirs, k_ours, k_ours);
  r = check(g, config::Role::primary, k_leader);
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::identity);
  CHECK_THAT(r.verdict.reason, dbcheck_test::StartsWith("identity: PostgreSQL's system identifier "
                                                        "7398765432109876543 is not the cluster's "
                                                        "7412345678901234567 that Patroni (GET "
                                                        "http://10.0.0.1:8008/primary) reports"));
}

TEST_CASE("the reader compares the node's identifier with the leader's sample, at no extra query",
          "[probe][pg][identity]") {
  auto f = identity_lab(k_ours, k_ours, k_ours);
  auto r = check(f, config::Role::replica, k_replica);
  CHECK(r.verdict.state == core::State::up);
  CHECK_THAT(r.verdict.reason, !dbcheck_test::Contains("identity"));
  CHECK(f->count("sql 10.0.0.1:5432") == 1);
  CHECK(f->count("sql 10.0.0.2:5432") == 1);

  auto g = identity_lab(k_ours, k_theirs, k_ours);
  r = check(g, config::Role::replica, k_replica);
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::identity);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("is not the cluster's 7412345678901234567 that its leader pg1 "
                                    "(sampled) reports"));
}

TEST_CASE("a check user refused pg_control_system() is asked again without it",
          "[probe][pg][identity]") {
  auto f = identity_lab(k_ours, k_ours, k_ours);
  const core::ProbeError refused{core::Failure::protocol,
                                 "42501: ERROR:  permission denied for function pg_control_system",
                                 "42501"};
  f->pg_answers["10.0.0.1:5432"] =
      [refused](
          const std::string& sql) -> tl::expected<std::vector<probe::PgRow>, core::ProbeError> {
    if (sql == core::k_writer_sql || sql == core::k_sample_sql) {
      return tl::make_unexpected(refused);
    }
    if (sql == core::without_identity(core::k_writer_sql)) {
      return std::vector<probe::PgRow>{{"f", "off", "3", "47"}};
    }
    return std::vector<probe::PgRow>{{"0/3000060", "00000001"}};
  };
  auto r = check(f, config::Role::primary, k_leader);
  CHECK(f->count("sql 10.0.0.1:5432") == 2);
  CHECK(r.verdict.state == core::State::up);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("identity not checked: pg_control_system() did not "
                                    "answer"));
  // The reader: the leader's sample is asked again; the replica's identifier is then not
  // compared, and the replica still passes.
  r = check(f, config::Role::replica, k_replica);
  CHECK(r.verdict.state == core::State::up);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("identity not checked: the leader was not sampled with its "
                                    "identifier"));
  // Any other refusal is not retried.
  f->pg_answers["10.0.0.1:5432"] =
      [](const std::string&) -> tl::expected<std::vector<probe::PgRow>, core::ProbeError> {
    return tl::make_unexpected(core::ProbeError{
        core::Failure::protocol, "42501: ERROR:  permission denied for view x", "42501"});
  };
  const int before = f->count("sql 10.0.0.1:5432");
  r = check(f, config::Role::primary, k_leader);
  CHECK(f->count("sql 10.0.0.1:5432") == before + 1);
  CHECK(r.verdict.state == core::State::down);
}
