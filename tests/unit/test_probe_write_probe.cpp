// The write probe through scripted peers (fake_peers.hpp): asked only of a read-write primary
// with write_probe = true, on the writer query's session, never committed, and what its
// failures make of the writer.
#include "dbcheck_catch.hpp"
#include "fake_peers.hpp"

#include <core/pg_errors.hpp>
#include <core/pg_rows.hpp>
#include <probe/pg_check.hpp>
#include <probe/write_probe.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace dbcheck;
using testing::FakePeers;

namespace {

const util::HostPort k_leader{"10.0.0.1", 5432};
const std::string k_sql = "sql 10.0.0.1:5432 ";

config::PostgresCluster probing(bool write_probe = true) {
  config::PostgresCluster c = testing::two_member_cluster();
  c.write_probe = write_probe;
  return c;
}

// pg1 leads and answers the writer query with `writer_row`; the probe's statements answer
// as `probe` says (an error for the one it names, by its first words).
std::shared_ptr<FakePeers> lab(std::vector<std::optional<std::string>> writer_row,
                               std::string failing = "", core::ProbeError error = {}) {
  auto f = std::make_shared<FakePeers>();
  f->http = [](const std::string& url) {
    return testing::http_ok(url.ends_with("/primary") ? testing::k_pg1_primary
                                                      : testing::k_two_member_cluster);
  };
  f->pg_answers["10.0.0.1:5432"] =
      [writer_row, failing,
       error](const std::string& sql) -> tl::expected<std::vector<probe::PgRow>, core::ProbeError> {
    if (sql == core::k_writer_sql) {
      return std::vector<probe::PgRow>{writer_row};
    }
    if (!failing.empty() && sql.rfind(failing, 0) == 0) {
      return tl::make_unexpected(error);
    }
    return std::vector<probe::PgRow>{};
  };
  return f;
}

const std::vector<std::optional<std::string>> k_read_write = {"f", "off", "3", "47"};

core::Report check(const std::shared_ptr<FakePeers>& f, const config::PostgresCluster& c) {
  auto r = probe::check_postgres(c, testing::two_member_writer(), k_leader,
                                 probe::Deadline::in(util::Duration{10000}), f);
  REQUIRE(testing::settled(f));
  return r;
}

} // namespace

TEST_CASE("the write probe extends a table and rolls back, on the writer's session",
          "[probe][write_probe]") {
  auto f = lab(k_read_write);
  const auto r = check(f, probing());
  const int writer_query = f->first(k_sql + core::k_writer_sql);
  const int begin = f->first(k_sql + "BEGIN");
  REQUIRE(writer_query >= 0);
  REQUIRE(begin > writer_query);
  CHECK(f->count("open 10.0.0.1:5432") == 1); // one session for both
  // The node's session alone: the manager's task logs its own calls meanwhile.
  std::vector<std::string> session;
  for (const auto& entry : f->log()) {
    if (entry.what.starts_with(k_sql)) {
      session.push_back(entry.what);
    }
  }
  const auto at = std::find(session.begin(), session.end(), k_sql + "BEGIN");
  REQUIRE(session.end() - at >= 5);
  CHECK(at[1].starts_with(k_sql + "SET LOCAL lock_timeout = '"));
  CHECK(at[2] == k_sql + probe::k_write_probe_truncate);
  CHECK(at[3] == k_sql + probe::k_write_probe_insert);
  CHECK(at[4] == k_sql + "ROLLBACK");
  CHECK(f->count(k_sql + "COMMIT") == 0);
  CHECK(r.verdict.state == core::State::up);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("extended a table (write probe, rolled back)"));
}

TEST_CASE("no write probe unless asked, nor on a node that is not a read-write primary",
          "[probe][write_probe]") {
  auto off = lab(k_read_write);
  check(off, probing(false));
  CHECK(off->count(k_sql + "BEGIN") == 0);

  auto standby = lab({"t", "on", "3", "47"});
  const auto r = check(standby, probing());
  CHECK(standby->count(k_sql + "BEGIN") == 0);
  CHECK(r.verdict.failure == core::Failure::role);
}

TEST_CASE("a full disk makes the writer unwritable, and the transaction is ended",
          "[probe][write_probe]") {
  const core::ProbeError full = core::classify_pg_query_error(
      "53100", "ERROR:  could not extend file \"base/16384/16999\": No space left on device\n"
               "HINT:  Check free disk space.\n");
  auto f = lab(k_read_write, "INSERT", full);
  const auto r = check(f, probing());
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::unwritable);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("PostgreSQL refuses writes: disk full: could not extend "
                                    "file \"base/16384/16999\": No space left on device "
                                    "(write probe)"));
  // The failed INSERT's transaction is rolled back, not left aborted on the session.
  CHECK(f->count(k_sql + "ROLLBACK") == 1);
  CHECK(f->first(k_sql + "ROLLBACK") > f->first(k_sql + "INSERT"));
}

TEST_CASE("a missing table or grant is a config reason naming the setup SQL",
          "[probe][write_probe]") {
  const auto [sqlstate, message] = GENERATE(table<const char*, const char*>({
      {"42P01", "ERROR:  relation \"dbcheck.write_probe\" does not exist\n"},
      {"42501", "ERROR:  permission denied for table write_probe\n"},
  }));
  auto f = lab(k_read_write, "TRUNCATE", core::classify_pg_query_error(sqlstate, message));
  const auto r = check(f, probing());
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::config);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("the write probe cannot run as configured: ") &&
                 dbcheck_test::Contains("`dbcheck setup-sql postgres` "
                                        "(docs/sql/healthcheck-role.sql)"));
}

TEST_CASE("a probe queued behind another's lock past its time is a timeout",
          "[probe][write_probe]") {
  auto f = lab(
      k_read_write, "TRUNCATE",
      core::classify_pg_query_error("55P03", "ERROR:  canceling statement due to lock timeout\n"));
  const auto r = check(f, probing());
  CHECK(r.verdict.failure == core::Failure::timeout);
}

TEST_CASE("past the deadline the probe is not started", "[probe][write_probe]") {
  FakePeers f;
  f.pg_answers["10.0.0.1:5432"] = [](const std::string&) { return std::vector<probe::PgRow>{}; };
  auto session = f.pg(probe::PgTarget{k_leader, "app", "hc", "", "prefer", {}, {}, {}});
  core::Report report;
  const auto done = probe::probe_write(*session, "10.0.0.1:5432",
                                       probe::Deadline{probe::Clock::time_point{}}, f, report);
  REQUIRE_FALSE(done);
  CHECK(done.error().kind == core::Failure::timeout);
  CHECK(f.count("sql ") == 0);
  REQUIRE(report.steps.size() == 1);
  CHECK(report.steps.front().opinion == "write_probe");
}
