// The HTTP port's routing: request path -> page -> status and body.
#include "dbcheck_catch.hpp"
#include "http_routes.hpp"

using namespace dbcheck;
using namespace dbcheck::agent;

namespace {

// pg_write on 10.0.0.1:5432, freshly probed at `now` and up for `reason`.
BackendSnapshot writer_up(probe::Clock::time_point now, std::string reason) {
  BackendSnapshot s;
  s.backend = "pg_write";
  s.node = "10.0.0.1:5432";
  s.started = true;
  s.updated = now;
  s.reported = {core::State::up, core::Failure::none, std::move(reason)};
  return s;
}

} // namespace

TEST_CASE("request paths map to pages", "[agent][http]") {
  CHECK(route_http_path("/live").page == HttpRoute::Page::live);
  CHECK(route_http_path("/health").page == HttpRoute::Page::health);
  CHECK(route_http_path("/metrics").page == HttpRoute::Page::metrics);
  CHECK(route_http_path("/metrics/").page == HttpRoute::Page::not_found);
  CHECK(route_http_path("/backend").page == HttpRoute::Page::not_found);
  CHECK(route_http_path("").page == HttpRoute::Page::not_found);
  const HttpRoute b = route_http_path("/backend/pg_write");
  CHECK(b.page == HttpRoute::Page::backend);
  CHECK(b.backend == "pg_write");
  CHECK(route_http_path("/backend/").backend.empty());
}

TEST_CASE("pages answer with the status HAProxy's http-check expects", "[agent][http]") {
  const auto now = probe::Clock::now();
  const BackendSnapshot up = writer_up(now, "leader");
  BackendSnapshot never = up;
  never.backend = "pg_read";
  never.started = false;
  const std::vector<BackendSnapshot> all{up, never};
  const AgentStatus agent;

  CHECK(answer_http(route_http_path("/live"), {}, agent, now).body == "alive\n");
  const HttpAnswer w = answer_http(route_http_path("/backend/pg_write"), all, agent, now);
  CHECK(w.status == 200);
  CHECK(w.body == "pg_write 10.0.0.1:5432 UP: leader\n");
  CHECK(answer_http(route_http_path("/backend/pg_read"), all, agent, now).status == 503);
  const HttpAnswer unknown = answer_http(route_http_path("/backend/nope"), all, agent, now);
  CHECK(unknown.status == 404);
  CHECK(unknown.body == "unknown backend nope\n");
  CHECK(answer_http(route_http_path("/x"), all, agent, now).status == 404);
  CHECK(answer_http(route_http_path("/health"), all, agent, now).content_type ==
        "application/json");
}

TEST_CASE("expose_reasons = false: pages show states, not topology", "[agent][http]") {
  const auto now = probe::Clock::now();
  const BackendSnapshot up = writer_up(now, "Patroni names 10.0.0.1:5432 leader");
  AgentStatus agent;
  agent.expose_reasons = false;
  const HttpAnswer w = answer_http(route_http_path("/backend/pg_write"), {up}, agent, now);
  CHECK(w.status == 200);
  CHECK(w.body == "pg_write UP\n");
  const std::string health = answer_http(route_http_path("/health"), {up}, agent, now).body;
  CHECK(health.find("\"state\": \"up\"") != std::string::npos);
  CHECK(health.find("10.0.0.1") == std::string::npos);
  CHECK(health.find("leader") == std::string::npos);
  CHECK(health.find("steps") == std::string::npos);
}
