// Every way a Patroni switchover ends, through scripted peers (fake_peers.hpp), one row per
// outcome: the result, and the state the run left the cluster in as the fakes recorded it (was
// POST /switchover sent, and to whom; who leads at the end).
#include "dbcheck_catch.hpp"
#include "fake_peers.hpp"

#include <core/pg_rows.hpp>
#include <switchover/switchover.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace dbcheck;
using testing::FakePeers;
using Phase = switchover::SwitchoverPhase;

namespace {

// What Patroni does with POST /switchover, and whether its GETs answer at all.
enum class PatroniAnswer {
  accept,     // 200, and pg2 leads from then on
  refuse,     // 412 with Patroni's message
  post_fails, // the POST reaches no member (its GETs answered a moment before)
  down        // no member answers anything
};

struct PgWorld {
  explicit PgWorld(PatroniAnswer a) : answer(a) {}
  const PatroniAnswer answer;
  std::mutex mutex;
  std::string leader = "pg1";
  std::vector<std::string> posts; // "url body"
};

std::string cluster_json(const std::string& leader) {
  const auto member = [&](const std::string& name, const std::string& ip) {
    return "{\"name\": \"" + name + "\", \"role\": \"" + (name == leader ? "leader" : "replica") +
           "\", \"state\": \"running\", \"api_url\": \"http://" + ip +
           ":8008/patroni\", \"host\": \"" + ip + "\", \"port\": 5432, \"timeline\": 1}";
  };
  return "{\"members\": [" + member("pg1", "10.0.0.1") + ", " + member("pg2", "10.0.0.2") + "]}";
}

std::string primary_json(const std::string& leader) {
  return "{\"state\": \"running\", \"role\": \"primary\", \"patroni\": {\"version\": \"4.1.4\", "
         "\"scope\": \"demo\", \"name\": \"" +
         leader + "\"}}";
}

config::PostgresCluster pg_cluster() {
  return testing::two_member_cluster();
}

std::shared_ptr<FakePeers> pg_lab(const std::shared_ptr<PgWorld>& world) {
  auto f = std::make_shared<FakePeers>();
  f->http = [world](const std::string& url) {
    std::lock_guard lock(world->mutex);
    if (world->answer == PatroniAnswer::down) {
      probe::HttpReply r;
      r.attempt.error = "Failed to connect: Connection refused";
      return r;
    }
    return testing::http_ok(url.ends_with("/primary") ? primary_json(world->leader)
                                                      : cluster_json(world->leader));
  };
  f->post_answer = [world](const std::string& url, const std::string& body) {
    std::lock_guard lock(world->mutex);
    world->posts.push_back(url + " " + body);
    probe::HttpReply r;
    switch (world->answer) {
    case PatroniAnswer::accept:
      world->leader = "pg2";
      r.attempt.status = 200;
      r.body = "Successfully switched over to \"pg2\"";
      break;
    case PatroniAnswer::refuse:
      r.attempt.status = 412;
      r.body = "candidate name does not match with sync_standby";
      break;
    case PatroniAnswer::post_fails:
    case PatroniAnswer::down:
      r.attempt.error = "Failed to connect: Connection refused";
      break;
    }
    return r;
  };
  for (const auto& [key, name] :
       {std::pair{"10.0.0.1:5432", "pg1"}, std::pair{"10.0.0.2:5432", "pg2"}}) {
    f->pg_answers[key] = [world, node = std::string{name}](const std::string& sql) {
      std::lock_guard lock(world->mutex);
      const bool leads = world->leader == node;
      if (sql == core::k_writer_sql) {
        return std::vector<probe::PgRow>{{leads ? "f" : "t", leads ? "off" : "on", "3", "47"}};
      }
      return std::vector<probe::PgRow>{{"0/3000060", "00000001"}};
    };
  }
  return f;
}

struct PatroniRow {
  const char* outcome;
  PatroniAnswer answer;
  std::optional<Phase> failed; // none: the switchover succeeded
  const char* error;           // part of the error ("" when it succeeded)
  std::size_t posts;           // POST /switchover sent
  const char* leader;          // who leads at the end
};

} // namespace

TEST_CASE("every Patroni switchover outcome, and what it leaves behind", "[switchover][pg]") {
  // clang-format off
  const PatroniRow row = GENERATE(values<PatroniRow>({
      // outcome; Patroni's answer; failed phase, error part, POSTs sent, leader at the end
      {"happy path: Patroni switches, the new leader passes the writer check",
       PatroniAnswer::accept, std::nullopt, "", 1, "pg2"},
      {"Patroni refuses: its status and message, no other member asked",
       PatroniAnswer::refuse, Phase::request,
       "Patroni did not accept the switchover: http://10.0.0.1:8008/switchover: HTTP 412 "
       "candidate name does not match with sync_standby", 1, "pg1"},
      {"Patroni unreachable for the POST: every member tried, nothing changed",
       PatroniAnswer::post_fails, Phase::request,
       "http://10.0.0.2:8008/switchover: Failed to connect: Connection refused", 2, "pg1"},
      {"Patroni unreachable from the start: no POST",
       PatroniAnswer::down, Phase::preflight, "Connection refused", 0, "pg1"},
  }));
  // clang-format on
  INFO(row.outcome);

  auto world = std::make_shared<PgWorld>(row.answer);
  auto peers = pg_lab(world);
  switchover::SwitchoverOptions options;
  options.timeout = util::Duration{20000};
  const auto r = switchover::run_switchover(config::Cluster{pg_cluster()}, options, {}, peers);
  REQUIRE(testing::settled(peers));

  CAPTURE(r.error);
  CHECK(r.ok == !row.failed);
  CHECK(r.failed == row.failed);
  CHECK_THAT(r.error, dbcheck_test::Contains(row.error));
  CHECK_FALSE(r.interrupted_by);
  std::lock_guard lock(world->mutex);
  CHECK(world->posts.size() == row.posts);
  if (!world->posts.empty()) {
    CHECK(world->posts.front() == "http://10.0.0.1:8008/switchover {\"leader\":\"pg1\"}");
  }
  CHECK(world->leader == row.leader);
  if (!row.failed) {
    CHECK(r.old_primary == "10.0.0.1:5432");
    CHECK(r.new_primary == "10.0.0.2:5432");
  }
}
