// The agent's shared state and what the HTTP port renders from it.
#include "dbcheck_catch.hpp"
#include "status_render.hpp"
#include "verdict_cache.hpp"

using namespace dbcheck;
using namespace dbcheck::agent;

namespace {
core::Report report(const std::string& backend, core::Verdict v, double ms) {
  core::Report r;
  r.backend = backend;
  r.node = "10.0.0.1:5432";
  r.role = "primary";
  r.verdict = std::move(v);
  r.elapsed_ms = ms;
  return r;
}
} // namespace

TEST_CASE("the cache damps, counts and renders", "[agent][cache]") {
  VerdictCache cache;
  config::Backend b;
  b.name = "pg_write";
  b.cluster = "pg";
  cache.track(b, util::HostPort{"10.0.0.1", 5432},
              core::TrackerPolicy{3, 2, util::Duration{5000}, true});
  CHECK(cache.get("nope") == std::nullopt);
  const auto t0 = probe::Clock::now();
  CHECK(cache.record(report("pg_write", {core::State::up, core::Failure::none, "ok"}, 3), t0)
            .changed);
  CHECK_FALSE(
      cache
          .record(report("pg_write", {core::State::down, core::Failure::timeout, "slow"}, 700),
                  t0 + std::chrono::seconds(1), {1, {{"max_age", 2}, {"broken", 0}}})
          .changed);
  const auto s = cache.get("pg_write");
  REQUIRE(s);
  CHECK(s->reported.state == core::State::up);
  CHECK(s->raw.failure == core::Failure::timeout);
  CHECK(s->rounds == 2);
  CHECK(s->failures_by_kind.at("timeout") == 1);
  CHECK(s->probe_connects == 1);

  AgentStatus agent;
  agent.stale_after_s = 3;
  const auto now = t0 + std::chrono::seconds(2);
  CHECK(fresh(*s, agent, now));
  CHECK_FALSE(fresh(*s, agent, t0 + std::chrono::seconds(5)));
  CHECK(render_backend_line(*s, agent, now) ==
        "pg_write 10.0.0.1:5432 UP: failing, 1 of 2 rounds: slow\n");
  CHECK(render_backend_line(*s, agent, t0 + std::chrono::seconds(5)) ==
        "pg_write 10.0.0.1:5432 DOWN: stale: no probe result for 4.0s\n");
  const std::string metrics = render_metrics(cache.all(), agent, now);
  CHECK(metrics.find("dbcheck_backend_up{backend=\"pg_write\",cluster=\"pg\",role=\"primary\",node="
                     "\"10.0.0.1:5432\"} 1\n") != std::string::npos);
  CHECK(metrics.find("dbcheck_check_duration_seconds_bucket{backend=\"pg_write\",cluster=\"pg\",le="
                     "\"0.005\"} 1\n") != std::string::npos);
  CHECK(metrics.find("dbcheck_check_duration_seconds_bucket{backend=\"pg_write\",cluster=\"pg\",le="
                     "\"+Inf\"} 2\n") != std::string::npos);
  CHECK(metrics.find("dbcheck_check_failures_total{backend=\"pg_write\",cluster=\"pg\",kind="
                     "\"timeout\"} 1\n") != std::string::npos);
  CHECK(metrics.find("dbcheck_transitions_total{backend=\"pg_write\",cluster=\"pg\",to=\"up\","
                     "failure=\"none\"} 1\n") != std::string::npos);
  CHECK(metrics.find("dbcheck_probe_connection_closes_total{backend=\"pg_write\",cluster=\"pg\","
                     "reason=\"max_age\"}"
                     " 2\n") != std::string::npos);
  const std::string health = render_health(cache.all(), agent, now);
  CHECK(health.find("\"hysteresis\"") != std::string::npos);
  CHECK(health.find("\"pending\": {\n") != std::string::npos);
  CHECK(health.find("\"kind\": \"failing\"") != std::string::npos);
  cache.retain({});
  CHECK(cache.all().empty());
}
