#include "dbcheck_catch.hpp"

#include <core/patroni_cluster.hpp>

using namespace dbcheck::core;
using dbcheck::util::HostPort;

namespace {
// A real Patroni 3.0.2 GET /cluster answer (lab run), trimmed.
constexpr const char* k_cluster_302 = R"({"members": [
  {"name": "pg1", "role": "leader", "state": "running", "api_url": "http://127.0.0.1:58008/patroni",
   "host": "127.0.0.1", "port": 55442, "timeline": 1},
  {"name": "pg2", "role": "replica", "state": "running", "api_url": "http://127.0.0.1:58009/patroni",
   "host": "127.0.0.1", "port": 55443, "timeline": 1, "lag": 0},
  {"name": "pg3", "role": "replica", "state": "running", "host": "127.0.0.1", "port": 55444,
   "timeline": 1, "lag": "unknown", "tags": {"noloadbalance": true}}]})";
} // namespace

TEST_CASE("parse_patroni_cluster reads members, leader and tags", "[core][patroni]") {
  const auto v = parse_patroni_cluster(k_cluster_302);
  REQUIRE(v);
  REQUIRE(v->members.size() == 3);
  const PatroniMember* leader = find_leader(*v);
  REQUIRE(leader != nullptr);
  CHECK(leader->name == "pg1");
  CHECK(leader->address == HostPort{"127.0.0.1", 55442});
  CHECK(find_member(*v, HostPort{"127.0.0.1", 55444})->noloadbalance);
  CHECK_FALSE(find_member(*v, HostPort{"127.0.0.1", 55443})->noloadbalance);
  CHECK(find_member(*v, HostPort{"127.0.0.1", 5432}) == nullptr);
  CHECK_FALSE(v->paused);
  // Timeline and lag, shown to operators: a number of bytes, "unknown", or nothing.
  CHECK(leader->timeline == 1);
  CHECK(leader->lag.empty());
  CHECK(find_member(*v, HostPort{"127.0.0.1", 55443})->lag == "0");
  CHECK(find_member(*v, HostPort{"127.0.0.1", 55444})->lag == "unknown");
}

TEST_CASE("leader role spellings of Patroni 3 and 4 are accepted", "[core][patroni]") {
  CHECK(is_leader_role("leader"));
  CHECK(is_leader_role("master"));
  CHECK(is_leader_role("primary"));
  CHECK_FALSE(is_leader_role("standby_leader"));
  CHECK_FALSE(is_leader_role("replica"));
  CHECK_FALSE(is_leader_role("sync_standby"));
}

TEST_CASE("a cluster without a leader, paused, or with address-less members", "[core][patroni]") {
  const auto v = parse_patroni_cluster(
      R"({"members":[{"name":"pg1","role":"replica","state":"stopped"},
                     {"name":"pg2","role":"replica","state":"running","host":"10.0.0.2",
                      "port":5432,"tags":{"noloadbalance":"true"}}],"pause":true})");
  REQUIRE(v);
  CHECK(v->members.size() == 1);
  CHECK(find_leader(*v) == nullptr);
  CHECK(v->paused);
  CHECK(v->members[0].noloadbalance);
}

TEST_CASE("parse_patroni_cluster refuses garbage with a reason", "[core][patroni]") {
  const auto [body, message] = GENERATE(table<const char*, const char*>({
      {"", "answer is not JSON"},
      {"<html>500</html>", "answer is not JSON"},
      {"{\"members\": [", "answer is not JSON"},
      {"[]", "answer is not a JSON object"},
      {"{}", "answer has no \"members\" list"},
      {"{\"members\": {}}", "answer has no \"members\" list"},
      {"{\"members\": [1]}", "a member entry is not a JSON object"},
      {"{\"members\": [{\"name\": \"pg1\"}]}", "member \"pg1\" has no role"},
      {"{\"members\": [{\"name\":\"pg1\",\"role\":\"leader\",\"host\":\"h\",\"port\":0}]}",
       "member \"pg1\" has port 0"},
  }));
  CAPTURE(body);
  const auto v = parse_patroni_cluster(body);
  REQUIRE_FALSE(v);
  CHECK(v.error() == message);
}

TEST_CASE("Patroni 4 roles and tags: quorum standbys, nofailover, replicatefrom",
          "[core][patroni]") {
  // Patroni 4.1 GET /cluster with synchronous_mode: quorum, a cascading replica.
  const auto v = parse_patroni_cluster(R"({"members": [
    {"name": "pg1", "role": "leader", "state": "running", "host": "10.0.0.1", "port": 5432},
    {"name": "pg2", "role": "quorum_standby", "state": "streaming", "host": "10.0.0.2",
     "port": 5432, "tags": {"nofailover": true}},
    {"name": "pg3", "role": "replica", "state": "streaming", "host": "10.0.0.3", "port": 5432,
     "tags": {"replicatefrom": "pg2", "nofailover": false}}]})");
  REQUIRE(v);
  REQUIRE(v->members.size() == 3);
  CHECK(v->members[1].nofailover);
  CHECK(v->members[1].replicatefrom.empty());
  CHECK_FALSE(v->members[2].nofailover);
  CHECK(v->members[2].replicatefrom == "pg2");
  CHECK(is_synchronous_role("quorum_standby"));
  CHECK(is_synchronous_role("sync_standby"));
  CHECK_FALSE(is_synchronous_role("replica"));
  CHECK_FALSE(is_synchronous_role("standby_leader"));
}

TEST_CASE("a standby cluster has a standby_leader and no leader", "[core][patroni]") {
  const auto v = parse_patroni_cluster(R"({"members": [
    {"name": "pg1", "role": "standby_leader", "state": "streaming", "host": "10.0.1.1", "port": 5432},
    {"name": "pg2", "role": "replica", "state": "streaming", "host": "10.0.1.2", "port": 5432}]})");
  REQUIRE(v);
  CHECK(find_leader(*v) == nullptr);
  REQUIRE(find_standby_leader(*v) != nullptr);
  CHECK(find_standby_leader(*v)->name == "pg1");
  const auto plain = parse_patroni_cluster(k_cluster_302);
  REQUIRE(plain);
  CHECK(find_standby_leader(*plain) == nullptr);
}
