// A standby cluster's readers measured against its source (source_cluster), through scripted
// peers (fake_peers.hpp): the source's leader sampled before the standby member is read, the
// bound taken like any replica's, and the commit age kept, with the reason, when the source
// cannot be read.
#include "dbcheck_catch.hpp"
#include "fake_peers.hpp"

#include <core/pg_rows.hpp>
#include <core/report.hpp>
#include <probe/pg_check.hpp>

using namespace dbcheck;
using namespace std::chrono_literals;
using testing::FakePeers;

namespace {

// The standby cluster: sb1 leads it as standby_leader, sb2 replicates from sb1.
constexpr const char* k_standby_view = R"({"members": [
  {"name": "sb1", "role": "standby_leader", "state": "streaming",
   "api_url": "http://10.0.1.1:8008/patroni", "host": "10.0.1.1", "port": 5432, "timeline": 1},
  {"name": "sb2", "role": "replica", "state": "streaming",
   "api_url": "http://10.0.1.2:8008/patroni", "host": "10.0.1.2", "port": 5432, "timeline": 1}]})";

// The source as a shared view may still have it: pg2 led it before.
constexpr const char* k_source_pg2_leads = R"({"members": [
  {"name": "pg2", "role": "leader", "state": "running", "api_url": "http://10.0.0.2:8008/patroni",
   "host": "10.0.0.2", "port": 5432, "timeline": 1}]})";

constexpr const char* k_id = "7412345678901234567";
const util::HostPort k_sb2{"10.0.1.2", 5432};
const std::string k_sb2_query = std::string{"sql 10.0.1.2:5432 "} + core::k_replica_sql;
const std::string k_source_sample = std::string{"sql 10.0.0.1:5432 "} + core::k_sample_sql;

// The source, "main": the two-member cluster of fake_peers.hpp, its own check user.
config::PostgresCluster source() {
  config::PostgresCluster c = testing::two_member_cluster();
  c.name = "main";
  c.user = "main_hc";
  c.shared_view_max_age = util::Duration{0}; // the fakes keep one shared view for every key
  return c;
}

// The standby cluster, its source `main` linked as load_config links it.
config::PostgresCluster standby(bool with_source = true) {
  config::PostgresCluster c;
  c.name = "standby";
  c.patroni = {"http://10.0.1.1:8008", "http://10.0.1.2:8008"};
  c.dbname = "postgres";
  c.user = "standby_hc";
  c.shared_view_max_age = util::Duration{0};
  if (with_source) {
    c.source_cluster = "main";
    c.source = std::make_shared<const config::PostgresCluster>(source());
  }
  return c;
}

config::Backend reader() {
  config::Backend b;
  b.name = "pg_read";
  b.cluster = "standby";
  b.role = config::Role::replica;
  b.max_lag = util::Duration{1000};
  return b;
}

tl::expected<std::vector<probe::PgRow>, core::ProbeError> fails(core::Failure kind,
                                                                std::string detail) {
  return tl::make_unexpected(core::ProbeError{kind, std::move(detail), ""});
}

// Peers where the standby's members agree on k_standby_view, the source's name pg1 leader (at
// 0/3000060 on timeline `source_tli`, identifier `source_id`), and sb2 streams on timeline 1
// with replay at `replay`, its last replayed commit `commit_age` seconds old (a quiet source).
std::shared_ptr<FakePeers> lab(std::string replay, std::string commit_age = "30.0",
                               std::string source_tli = "00000001", std::string source_id = k_id) {
  auto f = std::make_shared<FakePeers>();
  f->http = [](const std::string& url) {
    return testing::http_ok(url.rfind("http://10.0.1.", 0) == 0 ? k_standby_view
                                                                : testing::k_two_member_cluster);
  };
  f->pg_answers["10.0.0.1:5432"] = [source_tli, source_id](const std::string&) {
    return std::vector<probe::PgRow>{{"0/3000060", source_tli, source_id}};
  };
  f->pg_answers["10.0.1.2:5432"] = [replay, commit_age](const std::string& sql) {
    if (sql == core::k_replica_sql) {
      return std::vector<probe::PgRow>{{"t", "t", "streaming", "f", replay, commit_age, "1", k_id}};
    }
    return std::vector<probe::PgRow>{{replay, commit_age}};
  };
  return f;
}

core::Report check(const std::shared_ptr<FakePeers>& f,
                   const config::PostgresCluster& cluster = standby()) {
  auto r = probe::check_postgres(cluster, reader(), k_sb2,
                                 probe::Deadline::in(util::Duration{10000}), f);
  REQUIRE(testing::settled(f)); // no thread of the check outlives the test
  return r;
}

bool has_step(const core::Report& r, const std::string& opinion, const std::string& peer) {
  return std::any_of(r.steps.begin(), r.steps.end(), [&](const core::Step& s) {
    return s.opinion == opinion && s.peer.rfind(peer, 0) == 0;
  });
}

} // namespace

TEST_CASE("a standby member is bounded against its source's leader, sampled before it is read",
          "[probe][pg][standby]") {
  auto f = lab("0/3000060");
  const auto r = check(f);
  const int sample = f->first(k_source_sample);
  REQUIRE(sample >= 0);
  CHECK(f->first(k_sb2_query) > sample);
  CHECK(r.verdict.state == core::State::up); // the last commit is 30 s old: the source is quiet
  REQUIRE(r.lag);
  REQUIRE(r.lag->seconds);
  CHECK(*r.lag->seconds < 0.1);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains(
                 "replayed past the WAL position of leader pg1 of source cluster main sampled"));
  // The source is reached with its own settings, and explain shows how.
  bool source_user = false;
  for (const auto& t : f->pg_targets()) {
    source_user = source_user || (t.address.host == "10.0.0.1" && t.user == "main_hc");
  }
  CHECK(source_user);
  CHECK(has_step(r, "source_manager", "http://10.0.0."));
  CHECK(has_step(r, "source_sample", "10.0.0.1:5432"));
  CHECK(has_step(r, "manager", "http://10.0.1."));
}

TEST_CASE("the source's sample gets an earlier deadline than the standby member's own query",
          "[probe][pg][standby]") {
  auto f = lab("0/3000060");
  check(f);
  const auto log = f->log();
  const auto sample = log.at(static_cast<std::size_t>(f->first(k_source_sample)));
  const auto own = log.at(static_cast<std::size_t>(f->first(k_sb2_query)));
  CHECK(own.by - sample.by >= 2s);
  const auto members = log.at(static_cast<std::size_t>(f->first("get http://10.0.0.1:8008")));
  CHECK(members.by < sample.by); // the source's members leave time for its leader's sample
}

TEST_CASE("a standby member that stays behind its source's sample falls back on its last commit",
          "[probe][pg][standby]") {
  // Replay stopped behind the source's position: the watch ends at max_lag and the bound left is
  // the age of the last replayed commit, as for any replica.
  auto f = lab("0/3000000", "30.0");
  const auto r = check(f);
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::lag);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("replay still behind the WAL position of leader pg1 of "
                                    "source cluster main after ") &&
                 dbcheck_test::Contains("; last replayed commit was 30.000s ago"));
}

TEST_CASE("a standby member on another timeline than its source's leader is no reader",
          "[probe][pg][standby]") {
  auto f = lab("0/3000060", "0.2", "00000002");
  const auto r = check(f);
  CHECK(r.verdict.state == core::State::down);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("replica receives timeline 1, the leader writes timeline 2"));
}

TEST_CASE("a standby member holds the source's identifier: another cluster's is refused",
          "[probe][pg][standby][identity]") {
  auto f = lab("0/3000060", "0.2", "00000001", "7398765432109876543");
  const auto r = check(f);
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::identity);
  CHECK_THAT(r.verdict.reason, dbcheck_test::Contains("its leader pg1 of source cluster main "
                                                      "(sampled)"));
}

TEST_CASE("source members that fail: the commit age bounds the standby member, the reason says "
          "why",
          "[probe][pg][standby]") {
  auto f = lab("0/3000060", "0.3");
  f->http = [](const std::string& url) {
    if (url.rfind("http://10.0.1.", 0) == 0) {
      return testing::http_ok(k_standby_view);
    }
    probe::HttpReply refused;
    refused.attempt.error = "Connection refused";
    return refused;
  };
  const auto r = check(f);
  CHECK(r.verdict.state == core::State::up);
  CHECK(f->count("sql 10.0.0.") == 0);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("primary not sampled (source cluster main: "));
  CHECK_THAT(r.verdict.reason, dbcheck_test::Contains("; last replayed commit was 0.300s ago"));

  auto quiet = lab("0/3000060", "30.0");
  quiet->http = f->http;
  const auto q = check(quiet);
  CHECK(q.verdict.state == core::State::down); // the fallback still bounds: 30 s > max_lag
  CHECK(q.verdict.failure == core::Failure::lag);
}

TEST_CASE("a source leader that does not answer in time: the commit-age fallback",
          "[probe][pg][standby]") {
  auto f = lab("0/3000060", "0.3");
  f->pg_answers["10.0.0.1:5432"] = [](const std::string&) {
    return fails(core::Failure::timeout, "timeout: no answer by the deadline");
  };
  const auto r = check(f);
  CHECK(r.verdict.state == core::State::up);
  CHECK(f->count(k_sb2_query) == 1);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("primary not sampled (source cluster main: leader pg1: "
                                    "timeout: no answer by the deadline); last replayed commit "
                                    "was 0.300s ago"));
}

TEST_CASE("a source that names no leader: the commit-age fallback", "[probe][pg][standby]") {
  auto f = lab("0/3000060", "0.3");
  f->http = [](const std::string& url) {
    return testing::http_ok(url.rfind("http://10.0.1.", 0) == 0 ? k_standby_view
                                                                : R"({"members": []})");
  };
  const auto r = check(f);
  CHECK(r.verdict.state == core::State::up);
  CHECK_THAT(r.verdict.reason, dbcheck_test::Contains("(source cluster main: "));
}

TEST_CASE("an unreadable source: nothing asked of it, the commit age and why",
          "[probe][pg][standby]") {
  auto f = lab("0/3000060", "0.3");
  auto c = standby();
  c.source_unusable = "dbcheck.toml:9: cluster.main.password_file: cannot read password file";
  const auto r = check(f, c);
  CHECK(r.verdict.state == core::State::up);
  CHECK(f->count("get http://10.0.0.") == 0);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("(source cluster main: dbcheck.toml:9: "
                                    "cluster.main.password_file: cannot read password file)"));
}

TEST_CASE("without source_cluster a standby member keeps the commit age, and nothing else is "
          "asked",
          "[probe][pg][standby]") {
  auto f = lab("0/3000060", "0.3");
  const auto r = check(f, standby(false));
  CHECK(r.verdict.state == core::State::up);
  CHECK(f->count("get http://10.0.0.") == 0);
  CHECK(f->count("sql 10.0.0.") == 0);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("a standby cluster: its standby_leader sb1 replicates from a "
                                    "primary outside it"));
}

TEST_CASE("a standby member's writer check asks nothing of the source", "[probe][pg][standby]") {
  auto f = lab("0/3000060");
  f->pg_answers["10.0.1.2:5432"] = [](const std::string&) {
    return std::vector<probe::PgRow>{{"t", "on", "3", "47"}};
  };
  config::Backend w = reader();
  w.name = "pg_write";
  w.role = config::Role::primary;
  const auto r =
      probe::check_postgres(standby(), w, k_sb2, probe::Deadline::in(util::Duration{10000}), f);
  REQUIRE(testing::settled(f));
  CHECK(r.verdict.state == core::State::down);
  CHECK(f->count("get http://10.0.0.") == 0);
}

TEST_CASE("a shared view of the source that no longer fits is set aside and its members asked",
          "[probe][pg][standby][shared_view]") {
  auto f = lab("0/3000060");
  probe::SharedView v;
  v.body = k_source_pg2_leads; // pg2 has stepped down since
  v.agreeing = 2;
  v.configured = 2;
  v.pid = 4242;
  v.age_ms = 300;
  f->shared = v;
  f->pg_answers["10.0.0.2:5432"] = [](const std::string&) {
    return fails(core::Failure::protocol, "ERROR: recovery is in progress");
  };
  auto c = standby();
  config::PostgresCluster src = source();
  src.shared_view_max_age = util::Duration{1000}; // the source's checks share; the standby's not
  c.source = std::make_shared<const config::PostgresCluster>(src);
  const auto r = check(f, c);
  CHECK(f->count("get http://10.0.0.") >= 1); // asked live
  CHECK(f->count(k_source_sample) == 1);      // the leader the members name now
  CHECK(f->count(k_sb2_query) == 2);          // read again after the new sample
  CHECK(r.verdict.state == core::State::up);
  CHECK_THAT(r.verdict.reason, dbcheck_test::Contains("leader pg1 of source cluster main"));
  CHECK(has_step(r, "source_manager", "shared view"));
}
