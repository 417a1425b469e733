// The PostgreSQL checks' own rules, through scripted peers (fake_peers.hpp): the order that
// makes the lag bound sound, the earlier deadline of the leader's sample, the catch-up watch,
// and an abandoned Patroni query.
#include "dbcheck_catch.hpp"
#include "fake_peers.hpp"

#include <core/pg_rows.hpp>
#include <core/report.hpp>
#include <core/shared_view.hpp>
#include <probe/catch_up.hpp>
#include <probe/pg_check.hpp>
#include <util/format.hpp>

using namespace dbcheck;
using namespace std::chrono_literals;
using testing::FakePeers;

namespace {

constexpr const char* k_cluster = testing::k_two_member_cluster;
constexpr const char* k_primary = testing::k_pg1_primary;

const util::HostPort k_leader{"10.0.0.1", 5432};
const util::HostPort k_replica{"10.0.0.2", 5432};
const std::string k_replica_query = std::string{"sql 10.0.0.2:5432 "} + core::k_replica_sql;
const std::string k_replay_query = std::string{"sql 10.0.0.2:5432 "} + core::k_replay_sql;

config::PostgresCluster cluster() {
  return testing::two_member_cluster();
}

config::Backend backend(config::Role role, util::Duration max_lag = util::Duration{1000}) {
  config::Backend b;
  b.name = role == config::Role::primary ? "pg_write" : "pg_read";
  b.cluster = "demo";
  b.role = role;
  b.max_lag = max_lag;
  return b;
}

// Peers where the members agree pg1 leads, pg1 is a running primary at 0/3000060 on timeline 1,
// and pg2 is a streaming replica on timeline `tli` whose replay reads `replays` in turn (the
// last one repeats).
std::shared_ptr<FakePeers> lab(std::vector<std::string> replays, std::string tli = "1",
                               std::string paused = "f") {
  auto f = std::make_shared<FakePeers>();
  f->http = [](const std::string& url) {
    return testing::http_ok(url.ends_with("/primary") ? k_primary : k_cluster);
  };
  f->pg_answers["10.0.0.1:5432"] = [](const std::string& sql) {
    if (sql == core::k_writer_sql) {
      return std::vector<probe::PgRow>{{"f", "off", "3", "47"}};
    }
    return std::vector<probe::PgRow>{{"0/3000060", "00000001"}};
  };
  auto next = std::make_shared<std::size_t>(0);
  f->pg_answers["10.0.0.2:5432"] = [replays, tli, paused, next](const std::string& sql) {
    const std::string lsn = replays[std::min(*next, replays.size() - 1)];
    ++*next;
    if (sql == core::k_replica_sql) {
      return std::vector<probe::PgRow>{{"t", "t", "streaming", paused, lsn, "0.5", tli}};
    }
    return std::vector<probe::PgRow>{{lsn, "0.5"}};
  };
  return f;
}

core::Report check(const std::shared_ptr<FakePeers>& f, config::Role role,
                   const util::HostPort& node, util::Duration max_lag = util::Duration{1000}) {
  auto r = probe::check_postgres(cluster(), backend(role, max_lag), node,
                                 probe::Deadline::in(util::Duration{10000}), f);
  REQUIRE(testing::settled(f)); // no thread of the check outlives the test
  return r;
}

const core::Step& node_step(const core::Report& r) {
  for (const auto& s : r.steps) {
    if (s.opinion == "node") {
      return s;
    }
  }
  FAIL("no node step");
  return r.steps.front();
}

} // namespace

TEST_CASE("a replica is read only after the leader is sampled", "[probe][pg]") {
  auto f = lab({"0/3000060"});
  const auto r = check(f, config::Role::replica, k_replica);
  const int sample = f->first("sql 10.0.0.1:5432");
  REQUIRE(sample >= 0);
  REQUIRE(f->first(k_replica_query) > sample);
  CHECK(r.verdict.state == core::State::up);
  REQUIRE(r.lag);
  REQUIRE(r.lag->seconds);
  CHECK(*r.lag->seconds < 0.1);
}

TEST_CASE("the leader's sample gets an earlier deadline than the replica's own query",
          "[probe][pg]") {
  auto f = lab({"0/3000060"});
  check(f, config::Role::replica, k_replica);
  const auto log = f->log();
  const auto sample = log.at(static_cast<std::size_t>(f->first("sql 10.0.0.1:5432")));
  const auto own = log.at(static_cast<std::size_t>(f->first(k_replica_query)));
  // A quarter of the 10 s left is kept for the replica's own query.
  CHECK(own.by - sample.by >= 2s);
  CHECK(own.by - sample.by <= 3s);
}

TEST_CASE("a replica a little behind the sample is watched until it passes it", "[probe][pg]") {
  auto f = lab({"0/3000000", "0/3000010", "0/3000060"});
  const auto r = check(f, config::Role::replica, k_replica);
  CHECK(f->count(k_replay_query) == 2);
  CHECK(f->sleeps() == 2);
  CHECK_THAT(node_step(r).answer, dbcheck_test::Contains("replay_lsn=0/3000060") &&
                                      dbcheck_test::Contains("(replay polled 3 times)"));
  CHECK(r.verdict.state == core::State::up);
  REQUIRE(r.lag->seconds);
  CHECK(*r.lag->seconds < 0.1);
}

TEST_CASE("a replica's node step times the node alone: the leader's sample and the watch are "
          "not its",
          "[probe][pg][latency]") {
  auto f = lab({"0/3000000", "0/3000010", "0/3000060"});
  FakePeers* peers = f.get();
  const auto replica = f->pg_answers["10.0.0.2:5432"];
  f->pg_answers["10.0.0.2:5432"] = [replica, peers](const std::string& sql) {
    if (sql == core::k_replica_sql) {
      peers->sleep_for(250ms); // the node's own slowness
    }
    return replica(sql);
  };
  const auto leader = f->pg_answers["10.0.0.1:5432"];
  f->pg_answers["10.0.0.1:5432"] = [leader, peers](const std::string& sql) {
    peers->sleep_for(200ms); // a slow leader is the sample's time, not the replica's
    return leader(sql);
  };
  const auto r = check(f, config::Role::replica, k_replica);
  CHECK(f->count(k_replay_query) == 2);
  CHECK(r.node_answered);
  // Its connection and its answer (1 ms each on the fake clock, and the 250 ms); Patroni's
  // GETs may tick the shared fake clock meanwhile, a few ms at most.
  CHECK(node_step(r).latency_ms >= 251.0);
  CHECK(node_step(r).latency_ms < 260.0);
}

TEST_CASE("the watch ends once the sample is max_lag old", "[probe][pg]") {
  auto f = lab({"0/3000000"}); // never catches up
  const auto r = check(f, config::Role::replica, k_replica, util::Duration{100});
  const auto log = f->log();
  const auto sampled = log.at(static_cast<std::size_t>(f->first("sql 10.0.0.1:5432"))).at;
  const auto last = log.back();
  REQUIRE(last.what == k_replay_query);
  // Every read was made inside the window; the last within one pause of its end.
  CHECK(last.at <= sampled + 100ms + f->answer_takes);
  CHECK(last.at >= sampled + 100ms - probe::k_catch_up_pause - 2 * f->answer_takes);
  // Behind the sample: the bound falls back to the last replayed commit's age (0.5 s).
  REQUIRE(r.lag->seconds);
  CHECK(*r.lag->seconds >= 0.5);
  CHECK(r.verdict.state == core::State::down);
}

TEST_CASE("no watch when waiting cannot help", "[probe][pg]") {
  SECTION("another timeline: LSNs do not compare") {
    auto f = lab({"0/3000000", "0/3000060"}, "2");
    check(f, config::Role::replica, k_replica);
    CHECK(f->count(k_replay_query) == 0);
  }
  SECTION("replay paused") {
    auto f = lab({"0/3000000", "0/3000060"}, "1", "t");
    check(f, config::Role::replica, k_replica);
    CHECK(f->count(k_replay_query) == 0);
  }
}

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

// ---------------------------------------------------------------- shared views

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

TEST_CASE("a client certificate reaches libpq's target; explain names it, never the key",
          "[probe][pg]") {
  auto f = lab({"0/3000060"});
  auto c = cluster();
  c.sslcert = "/etc/dbcheck/hc.crt";
  c.sslkey = "/etc/dbcheck/hc.key";
  const auto r = probe::check_postgres(c, backend(config::Role::replica), k_replica,
                                       probe::Deadline::in(util::Duration{10000}), f);
  REQUIRE(testing::settled(f));
  CHECK(r.verdict.state == core::State::up);
  // The replica and the leader's sample: both connections present the certificate.
  const auto targets = f->pg_targets();
  REQUIRE(targets.size() == 2);
  for (const auto& t : targets) {
    CHECK(t.sslcert == c.sslcert);
    CHECK(t.sslkey == c.sslkey);
    CHECK(t.password.empty());
  }
  const std::string words = "user healthcheck: client certificate /etc/dbcheck/hc.crt";
  CHECK(r.auth == words);
  CHECK_THAT(core::render_text(r), dbcheck_test::Contains("  auth           " + words + "\n"));
  CHECK_THAT(core::render_json(r), dbcheck_test::Contains("\"auth\": \"" + words + "\""));
  CHECK(core::render_text(r).find("hc.key") == std::string::npos);

  c.password_file = "/etc/dbcheck/pg.password";
  CHECK(probe::check_postgres(c, backend(config::Role::primary), k_leader,
                              probe::Deadline::in(util::Duration{10000}), f)
            .auth == words + ", password from /etc/dbcheck/pg.password");
  REQUIRE(testing::settled(f));
  CHECK(check(f, config::Role::primary, k_leader).auth ==
        "user healthcheck: no certificate, no password (only pg_hba's trust lets it in)");
}

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
