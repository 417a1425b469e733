// What the PostgreSQL check asks of Patroni, through scripted peers (pg_check_fixtures.hpp):
// the members in turn until a majority agrees, the leader's own GET /primary only for the node
// they name, members advertised by name, a query abandoned at the deadline, and every member's
// GET /primary when none answers GET /cluster.
#include "dbcheck_catch.hpp"
#include "pg_check_fixtures.hpp"

#include <core/pg_rows.hpp>
#include <core/report.hpp>
#include <probe/pg_check.hpp>

#include <memory>
#include <string>

using namespace dbcheck;
using namespace dbcheck::testing::pg_check;
using testing::FakePeers;

TEST_CASE("the writer asks the leader's own Patroni only for the node the members name",
          "[probe][pg]") {
  auto f = lab({"0/3000060"});
  auto r = check(f, config::Role::primary, k_leader);
  CHECK(f->count("get http://10.0.0.1:8008/primary") == 1);
  CHECK(r.verdict.state == core::State::up);

  auto g = lab({"0/3000060"});
  r = check(g, config::Role::primary, k_replica);
  CHECK(g->count("get http://10.0.0.1:8008/primary") +
            g->count("get http://10.0.0.2:8008/primary") ==
        0);
  CHECK(r.verdict.state == core::State::down);
}

TEST_CASE("Patroni members that never answer are abandoned at the deadline", "[probe][pg]") {
  auto f = lab({"0/3000060"});
  auto gate = std::make_shared<testing::Gate>();
  f->http = [gate](const std::string&) {
    gate->wait(); // until the check has returned: it must not wait for this
    return testing::http_ok(k_cluster);
  };
  const auto r = probe::check_postgres(cluster(), backend(config::Role::primary), k_leader,
                                       probe::Deadline::in(util::Duration{100}), f);
  gate->open();
  REQUIRE(testing::settled(f));
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::timeout);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("the Patroni query did not finish by the deadline"));
}

namespace {

constexpr const char* k_cluster_named = R"({"members": [
  {"name": "pg1", "role": "leader", "state": "running", "api_url": "http://10.0.0.1:8008/patroni",
   "host": "pg1.example", "port": 5432, "timeline": 1},
  {"name": "pg2", "role": "replica", "state": "running", "api_url": "http://10.0.0.2:8008/patroni",
   "host": "pg2.example", "port": 5432, "timeline": 1}]})";

std::shared_ptr<FakePeers> named_lab() {
  auto f = lab({"0/3000060"});
  f->http = [](const std::string& url) {
    return testing::http_ok(url.ends_with("/primary") ? k_primary : k_cluster_named);
  };
  return f;
}

} // namespace

TEST_CASE("Patroni members advertised by name are compared by the one address each resolves to",
          "[probe][pg][names]") {
  auto f = named_lab();
  f->names = {{"pg1.example", {"10.0.0.1"}}, {"pg2.example", {"10.0.0.2"}}};
  auto r = check(f, config::Role::primary, k_leader);
  CHECK(r.verdict.state == core::State::up);
  CHECK(f->count("get http://10.0.0.1:8008/primary") == 1);
  CHECK_THAT(core::render_text(r), dbcheck_test::Contains("pg1.example -> 10.0.0.1"));

  // The replica: the leader sampled at its resolved address.
  auto g = named_lab();
  g->names = f->names;
  r = check(g, config::Role::replica, k_replica);
  CHECK(r.verdict.state == core::State::up);
  CHECK(g->count("sql 10.0.0.1:5432") == 1);
}

TEST_CASE("a leader name that does not resolve fails the writer closed, saying why",
          "[probe][pg][names]") {
  auto f = named_lab();
  f->names = {{"pg2.example", {"10.0.0.2"}}};
  const auto r = check(f, config::Role::primary, k_leader);
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::network);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("whether that is this node is not known: pg1.example did not "
                                    "resolve: no such name"));
}

TEST_CASE("a leader name that does not resolve is not sampled: libpq would resolve it unbounded",
          "[probe][pg][names]") {
  auto f = named_lab();
  f->names = {{"pg2.example", {"10.0.0.2"}}};
  const auto r = check(f, config::Role::replica, k_replica);
  CHECK(f->count("open pg1.example") == 0);
  CHECK(f->count("sql pg1.example") == 0);
  REQUIRE(r.lag);
  CHECK_THAT(r.lag->derivation,
             dbcheck_test::Contains("pg1.example did not resolve: no such name"));
}

namespace {

core::Report check_three(const std::shared_ptr<FakePeers>& f, config::Role role,
                         const util::HostPort& node) {
  config::PostgresCluster c = cluster();
  c.patroni.push_back("http://10.0.0.3:8008");
  auto r =
      probe::check_postgres(c, backend(role), node, probe::Deadline::in(util::Duration{10000}), f);
  REQUIRE(testing::settled(f));
  return r;
}

} // namespace

TEST_CASE("a writer check asks the node's own Patroni first, and its naming another leader "
          "decides",
          "[probe][pg][patroni]") {
  auto f = lab({"0/3000060"});
  const auto r = check_three(f, config::Role::primary, k_replica);
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::role);
  CHECK(f->count("get http://10.0.0.2:8008/cluster") == 1);
  CHECK(f->count("get http://10.0.0.1:8008/cluster") == 0);
  CHECK(f->count("get http://10.0.0.3:8008/cluster") == 0);
  CHECK(f->count("get http://10.0.0.1:8008/primary") == 0);
}

TEST_CASE("the leader needs a majority's worth of members and its own GET /primary, no more",
          "[probe][pg][patroni]") {
  auto f = lab({"0/3000060"});
  const auto r = check_three(f, config::Role::primary, k_leader);
  CHECK(r.verdict.state == core::State::up);
  CHECK(f->count("get http://10.0.0.1:8008/cluster") == 1);
  CHECK(f->count("get http://10.0.0.2:8008/cluster") == 1);
  CHECK(f->count("get http://10.0.0.3:8008/cluster") == 0);
  CHECK(f->count("get http://10.0.0.1:8008/primary") == 1);
  CHECK_THAT(core::render_text(r), dbcheck_test::Contains("not needed"));
}

TEST_CASE("a member that refuses brings in the members not yet asked", "[probe][pg][patroni]") {
  auto f = lab({"0/3000060"});
  f->http = [](const std::string& url) {
    if (url.starts_with("http://10.0.0.1:")) {
      probe::HttpReply refused;
      refused.attempt.error = "Connection refused";
      return refused;
    }
    return testing::http_ok(url.ends_with("/primary") ? k_primary : k_cluster);
  };
  const auto r = check_three(f, config::Role::replica, k_replica);
  CHECK(f->first("get http://10.0.0.2:8008/cluster") <
        f->first("get http://10.0.0.3:8008/cluster"));
  CHECK(f->count("get http://10.0.0.3:8008/cluster") == 1);
  // The own member and the third agree: a majority of three; the replica is judged.
  CHECK(r.verdict.state == core::State::up);
}

TEST_CASE("no member answering GET /cluster: every member's GET /primary, and Patroni's "
          "failsafe leader stays the writer",
          "[probe][pg][patroni][outage]") {
  auto f = lab({"0/3000060"});
  f->http = [](const std::string& url) {
    if (url.ends_with("/cluster")) {
      probe::HttpReply hung;
      hung.attempt.error = "HTTP 503"; // the DCS cannot be read
      hung.attempt.status = 503;
      return hung;
    }
    if (url.starts_with("http://10.0.0.1:")) {
      return testing::http_ok(
          R"({"state": "running", "role": "primary", "failsafe_mode_is_active": true})");
    }
    probe::HttpReply replica = testing::http_ok(R"({"state": "running", "role": "replica"})");
    replica.attempt.status = 503;
    return replica;
  };
  const auto r = check_three(f, config::Role::primary, k_leader);
  for (const char* base :
       {"http://10.0.0.1:8008", "http://10.0.0.2:8008", "http://10.0.0.3:8008"}) {
    CHECK(f->count(std::string{"get "} + base + "/primary") == 1);
  }
  CHECK(r.verdict.state == core::State::up);
  CHECK_THAT(r.verdict.reason, dbcheck_test::Contains("failsafe mode is active"));
  CHECK_THAT(core::render_text(r), dbcheck_test::Contains("no member answered GET /cluster"));
}

namespace {

// Peers where no member answers GET /cluster (the DCS cannot be read), pg1's Patroni keeps the
// leader under failsafe at 0/3000060 on timeline 1, and the others run replicas; `own_body`
// is pg2's own status. pg2 replays `replay`; both report the same system identifier.
std::shared_ptr<FakePeers> outage_lab(std::string replay,
                                      std::string own_body = R"({"state": "running",
                                        "role": "replica"})") {
  auto f = lab({replay});
  f->http = [own_body](const std::string& url) {
    if (url.ends_with("/cluster")) {
      probe::HttpReply hung;
      hung.attempt.error = "HTTP 503";
      hung.attempt.status = 503;
      return hung;
    }
    if (url.starts_with("http://10.0.0.1:")) {
      return testing::http_ok(R"({"state": "running", "role": "primary", "timeline": 1,
        "xlog": {"location": 50331744}, "failsafe_mode_is_active": true,
        "database_system_identifier": "7412345678901234567"})");
    }
    probe::HttpReply replica = testing::http_ok(url.starts_with("http://10.0.0.2:")
                                                    ? own_body
                                                    : R"({"state": "running", "role": "replica"})");
    replica.attempt.status = 503;
    return replica;
  };
  f->pg_answers["10.0.0.2:5432"] = [replay](const std::string& sql) {
    if (sql == core::k_replica_sql) {
      return std::vector<probe::PgRow>{
          {"t", "t", "streaming", "f", replay, "0.5", "1", "7412345678901234567"}};
    }
    return std::vector<probe::PgRow>{{replay, "0.5"}};
  };
  return f;
}

} // namespace

TEST_CASE("no member answering GET /cluster: a replica is measured against the leader Patroni "
          "keeps, from its GET /primary, read before the replica",
          "[probe][pg][patroni][outage]") {
  SECTION("caught up with the kept leader's position: up, and the reason says why") {
    auto f = outage_lab("0/3000060");
    const auto r = check_three(f, config::Role::replica, k_replica);
    CHECK(f->first("get http://10.0.0.1:8008/primary") < f->first(k_replica_query));
    CHECK(f->count("sql 10.0.0.1:5432") == 0); // its position came with its Patroni's answer
    CHECK(r.verdict.state == core::State::up);
    CHECK_THAT(r.verdict.reason, dbcheck_test::Contains("no member gives its view"));
    CHECK_THAT(r.verdict.reason, dbcheck_test::Contains("failsafe mode is active"));
    REQUIRE(r.lag);
    CHECK_THAT(r.lag->derivation, dbcheck_test::Contains("kept leader's WAL position"));
  }
  SECTION("behind it, replay never reaching it: bounded by the last commit's age only") {
    auto f = outage_lab("0/2000000");
    const auto r = check_three(f, config::Role::replica, k_replica);
    REQUIRE(r.lag);
    CHECK_THAT(r.lag->derivation, dbcheck_test::Contains("still behind the kept leader's"));
  }
  SECTION("its own Patroni tags it noloadbalance: down, as Patroni's GET /replica") {
    auto f = outage_lab("0/3000060", R"({"state": "running", "role": "replica",
                                           "tags": {"noloadbalance": true}})");
    const auto r = check_three(f, config::Role::replica, k_replica);
    CHECK(r.verdict.state == core::State::down);
    CHECK(r.verdict.failure == core::Failure::policy);
  }
}
