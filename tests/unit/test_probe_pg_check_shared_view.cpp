// The shared view in the PostgreSQL check, through scripted peers (pg_check_fixtures.hpp): when
// a view the members agreed on a moment ago stands in for asking them, and when it is set aside.
#include "dbcheck_catch.hpp"
#include "pg_check_fixtures.hpp"

#include <core/pg_rows.hpp>
#include <core/report.hpp>
#include <core/shared_view.hpp>
#include <probe/pg_check.hpp>
#include <util/host_port.hpp>

#include <string>

using namespace dbcheck;
using namespace dbcheck::testing::pg_check;
using testing::FakePeers;

namespace {

constexpr const char* k_cluster_pg2_leads = R"({"members": [
  {"name": "pg1", "role": "replica", "state": "running", "api_url": "http://10.0.0.1:8008/patroni",
   "host": "10.0.0.1", "port": 5432, "timeline": 2},
  {"name": "pg2", "role": "leader", "state": "running", "api_url": "http://10.0.0.2:8008/patroni",
   "host": "10.0.0.2", "port": 5432, "timeline": 2}]})";
constexpr const char* k_cluster_pg3_leads = R"({"members": [
  {"name": "pg3", "role": "leader", "state": "running", "api_url": "http://10.0.0.3:8008/patroni",
   "host": "10.0.0.3", "port": 5432, "timeline": 1},
  {"name": "pg2", "role": "replica", "state": "running", "api_url": "http://10.0.0.2:8008/patroni",
   "host": "10.0.0.2", "port": 5432, "timeline": 1}]})";

core::Report check_sharing(const std::shared_ptr<FakePeers>& f, config::Role role,
                           const util::HostPort& node) {
  config::PostgresCluster c = cluster();
  c.shared_view_max_age = util::Duration{1000};
  auto r =
      probe::check_postgres(c, backend(role), node, probe::Deadline::in(util::Duration{10000}), f);
  REQUIRE(testing::settled(f));
  return r;
}

probe::SharedView shared(const char* body) {
  probe::SharedView v;
  v.body = body;
  v.agreeing = 2;
  v.configured = 2;
  v.pid = 4242;
  v.age_ms = 300;
  return v;
}

bool has_step(const core::Report& r, const std::string& text) {
  for (const auto& s : r.steps) {
    if (s.answer.find(text) != std::string::npos || s.peer.find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

} // namespace

TEST_CASE("a replica's writer check fails on a shared view and asks no member",
          "[probe][pg][shared_view]") {
  auto f = lab({"0/3000060"});
  f->shared = shared(k_cluster);
  f->pg_answers["10.0.0.2:5432"] = [](const std::string&) {
    return std::vector<probe::PgRow>{{"t", "on", "3", "47"}}; // in recovery
  };
  const auto r = check_sharing(f, config::Role::primary, k_replica);
  CHECK(r.verdict.state == core::State::down);
  CHECK(f->count("get ") == 0);
  CHECK(f->count("sql 10.0.0.2:5432") == 1); // the node's own opinion, live
  CHECK(has_step(r, "2 of 2 members agreed 300 ms ago (check pid 4242; reused up to 1000 ms: "
                    "shared_view_max_age)"));
  CHECK(f->count("mark ") == 0); // a max age set: no cadence needed
}

TEST_CASE("a writable node never passes on a shared view: its members are asked",
          "[probe][pg][shared_view]") {
  auto f = lab({"0/3000060"});
  f->shared = shared(k_cluster); // names pg1 leader, as the members still do
  const auto r = check_sharing(f, config::Role::primary, k_leader);
  CHECK(r.verdict.state == core::State::up);
  CHECK(f->count("get http://10.0.0.1:8008/cluster") == 1);
  CHECK(f->count("get http://10.0.0.1:8008/primary") == 1);
  // Set aside as soon as it names the node, beside the node's query rather than after it.
  CHECK(has_step(r, "set aside: it names this node leader, so the members are asked"));
  CHECK(f->count(std::string{"sql 10.0.0.1:5432 "} + core::k_writer_sql) == 1);
  REQUIRE(f->shares.size() == 1);
}

TEST_CASE("a replica reads with a fitting shared view and asks no member",
          "[probe][pg][shared_view]") {
  auto f = lab({"0/3000060"});
  f->shared = shared(k_cluster);
  const auto r = check_sharing(f, config::Role::replica, k_replica);
  CHECK(r.verdict.state == core::State::up);
  CHECK(f->count("get ") == 0);
  CHECK(f->count("sql 10.0.0.1:5432") == 1); // the leader sampled, live
}

TEST_CASE("a writable node the shared view does not name makes the check ask the members",
          "[probe][pg][shared_view]") {
  // pg2 was promoted after the view was shared: it names pg1.
  auto f = lab({"0/3000060"});
  f->shared = shared(k_cluster);
  f->http = [](const std::string& url) {
    return testing::http_ok(url.ends_with("/primary") ? R"({"state": "running", "role": "primary",
                                     "patroni": {"version": "4.1.4", "scope": "demo", "name": "pg2"}})"
                                                      : k_cluster_pg2_leads);
  };
  f->pg_answers["10.0.0.2:5432"] = [](const std::string&) {
    return std::vector<probe::PgRow>{{"f", "off", "3", "47"}};
  };
  const auto r = check_sharing(f, config::Role::primary, k_replica);
  CHECK(f->count("get http://10.0.0.2:8008/cluster") == 1); // asked live, own first
  CHECK(r.verdict.state == core::State::up);
  CHECK(has_step(r, "set aside: the node is read-write or named leader, so the members are asked"));
  REQUIRE(f->shares.size() == 1); // and what the members said now is shared
  CHECK(f->shares[0].body == k_cluster_pg2_leads);
}

TEST_CASE("a replica whose shared leader cannot be sampled asks the members",
          "[probe][pg][shared_view]") {
  auto f = lab({"0/3000060"});
  f->shared = shared(k_cluster_pg3_leads); // pg3 has gone
  f->pg_answers["10.0.0.3:5432"] = [](const std::string&) {
    return tl::expected<std::vector<probe::PgRow>, core::ProbeError>(
        tl::make_unexpected(core::ProbeError{core::Failure::network, "connection refused", ""}));
  };
  const auto r = check_sharing(f, config::Role::replica, k_replica);
  CHECK(f->count("get ") >= 1);
  CHECK(f->count("sql 10.0.0.1:5432") == 1); // the leader the members name now
  CHECK(r.verdict.state == core::State::up);
  CHECK(has_step(r, "set aside"));
}

TEST_CASE("a replica whose shared leader hangs keeps the view: the time is the replica's",
          "[probe][pg][shared_view]") {
  auto f = lab({"0/3000060"});
  f->shared = shared(k_cluster);
  f->pg_answers["10.0.0.1:5432"] = [](const std::string&) {
    return tl::expected<std::vector<probe::PgRow>, core::ProbeError>(tl::make_unexpected(
        core::ProbeError{core::Failure::timeout, "no answer before the deadline", ""}));
  };
  const auto r = check_sharing(f, config::Role::replica, k_replica);
  CHECK(f->count("get ") == 0);
  CHECK_FALSE(has_step(r, "set aside"));
  CHECK(f->count(k_replica_query) == 1);
}

TEST_CASE("a majority's view is shared; a check without max_age neither reads nor shares",
          "[probe][pg][shared_view]") {
  auto f = lab({"0/3000060"});
  check_sharing(f, config::Role::replica, k_replica);
  REQUIRE(f->shares.size() == 1);
  CHECK(f->shares[0].body == k_cluster);
  CHECK(f->shares[0].agreeing == 2);
  CHECK(f->shares[0].configured == 2);

  auto g = lab({"0/3000060"});
  g->shared = shared(k_cluster);
  auto off = cluster();
  off.shared_view_max_age = util::Duration{0}; // "0s": every check asks the members
  probe::check_postgres(off, backend(config::Role::replica), k_replica,
                        probe::Deadline::in(util::Duration{10000}), g);
  REQUIRE(testing::settled(g));
  CHECK(g->count("get ") >= 1);
  CHECK(g->shares.empty());
}

TEST_CASE("auto: views are reused for half the time since this server's last check",
          "[probe][pg][shared_view]") {
  using namespace std::chrono_literals;
  auto f = lab({"0/3000060"});
  f->shared = shared(k_cluster);
  f->since_last = 2100ms; // inter 2s, and the last check's own 100 ms
  const auto r = probe::check_postgres(cluster(), backend(config::Role::replica), k_replica,
                                       probe::Deadline::in(util::Duration{10000}), f);
  REQUIRE(testing::settled(f));
  CHECK(r.verdict.state == core::State::up);
  CHECK(f->count("get ") == 0);
  CHECK(f->asked_max_age == 1050ms);
  CHECK(has_step(r, "reused up to 1050 ms: half the time since this server's last check"));
  // One mark per check, under this backend's and this server's own name.
  CHECK(f->count("mark " + core::check_mark_key("pg_read", util::to_string(k_replica))) == 1);
  CHECK(f->count("mark ") == 1);
}

TEST_CASE("auto: a check with no check of its server just before asks live, and shares",
          "[probe][pg][shared_view]") {
  auto f = lab({"0/3000060"});
  f->shared = shared(k_cluster);
  f->since_last = std::nullopt; // the first check, or one run by hand
  const auto r = probe::check_postgres(cluster(), backend(config::Role::replica), k_replica,
                                       probe::Deadline::in(util::Duration{10000}), f);
  REQUIRE(testing::settled(f));
  CHECK(r.verdict.state == core::State::up);
  CHECK(f->count("shared view ") == 0);
  CHECK(f->count("get ") >= 1);
  CHECK(f->shares.size() == 1);
}
