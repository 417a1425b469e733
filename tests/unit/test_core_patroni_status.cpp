// GET /patroni (and /primary, the same document) as Patroni 3.0.2 and 4.1 answer them.
#include "dbcheck_catch.hpp"

#include <core/patroni_status.hpp>

using namespace dbcheck::core;

TEST_CASE("GET /patroni: state, role, DCS contact and name", "[core][patroni][status]") {
  // Patroni 3.0.2 (no member name), trimmed.
  auto s = parse_patroni_status(
      R"({"state": "running", "postmaster_start_time": "2026-11-30 05:00:00+00:00",
          "role": "master", "server_version": 150018, "xlog": {"location": 67108960},
          "timeline": 1, "dcs_last_seen": 1764480000, "database_system_identifier": "7",
          "patroni": {"version": "3.0.2", "scope": "demo"}})");
  REQUIRE(s);
  CHECK(s->state == "running");
  CHECK(s->role == "master");
  CHECK(s->dcs_last_seen == 1764480000);
  CHECK_FALSE(s->name);
  CHECK(s->system_id == 7u);
  // Patroni 4.1: primary, and its name.
  s = parse_patroni_status(
      R"({"state": "running", "role": "primary", "dcs_last_seen": 1764480001,
          "patroni": {"version": "4.1.4", "scope": "demo", "name": "pg1"}})");
  REQUIRE(s);
  CHECK(s->role == "primary");
  CHECK(s->name == "pg1");
  CHECK_FALSE(s->system_id); // none while bootstrapping: not checked
  // A Patroni whose query failed says only its state and remembered role.
  s = parse_patroni_status(R"({"state": "unknown", "role": "master"})");
  REQUIRE(s);
  CHECK_FALSE(s->dcs_last_seen);

  CHECK(parse_patroni_status("<html>").error() == "answer is not JSON");
  CHECK(parse_patroni_status("[]").error() == "answer is not a JSON object");
  CHECK(parse_patroni_status(R"({"role": "master"})").error() ==
        "answer has no \"state\" and \"role\"");
  CHECK(parse_patroni_status(R"({"state": 1, "role": "master"})").error() ==
        "answer has no \"state\" and \"role\"");
  for (const char* bad : {R"("")", R"("x7")", R"("-7")", "7", "null"}) {
    CAPTURE(bad);
    CHECK(parse_patroni_status(
              std::string{
                  R"({"state": "running", "role": "primary", "database_system_identifier": )"} +
              bad + "}")
              .error() == "answer's \"database_system_identifier\" is not an unsigned number");
  }
}

TEST_CASE("GET /primary: a primary's WAL position and timeline, and the noloadbalance tag",
          "[core][patroni][status]") {
  const auto s = parse_patroni_status(R"({"state": "running", "role": "primary",
    "xlog": {"location": 50331744}, "timeline": 3, "tags": {"noloadbalance": "yes"}})");
  REQUIRE(s);
  CHECK(s->wal_location == 50331744u);
  CHECK(s->timeline == 3u);
  CHECK(s->noloadbalance);
  const auto r = parse_patroni_status(R"({"state": "running", "role": "replica",
    "xlog": {"received_location": 5, "replayed_location": 5}, "timeline": -1})");
  REQUIRE(r);
  CHECK_FALSE(r->wal_location);
  CHECK_FALSE(r->timeline); // not a timeline: as good as none
  CHECK_FALSE(r->noloadbalance);
}
