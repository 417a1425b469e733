// The declared metrics (agent/metrics_list.hpp) are what /metrics exports and what
// docs/agent.md lists: nothing written by hand beside the list, nothing listed and missing.
#include "dbcheck_catch.hpp"

#include <util/format.hpp>

#include <fstream>
#include <metrics_list.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <status_render.hpp>

using namespace dbcheck;
using namespace dbcheck::agent;

namespace {

// The metric families an exposition declares with # TYPE, and the families its samples use.
std::pair<std::set<std::string>, std::set<std::string>> families(const std::string& text) {
  std::set<std::string> typed;
  std::set<std::string> sampled;
  std::istringstream in(text);
  std::string line;
  const std::regex type_line(R"(^# TYPE (\S+) (gauge|counter|histogram)$)");
  const std::regex sample_line(R"(^([a-z_]+?)(_bucket|_sum|_count)?(\{.*\})? \S+$)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, type_line)) {
      typed.insert(m[1]);
    } else if (line.rfind("#", 0) != 0 && std::regex_match(line, m, sample_line)) {
      const std::string name = m[1];
      sampled.insert(typed.count(name) != 0 ? name : name + std::string{m[2]});
    }
  }
  return {typed, sampled};
}

} // namespace

TEST_CASE("every declared metric is exported with its HELP and TYPE, and nothing else",
          "[agent][metrics]") {
  VerdictCache cache;
  config::Backend b;
  b.name = "cache";
  b.cluster = "cache";
  b.role = config::Role::replica;
  cache.track(b, util::HostPort{"10.0.0.2", 6379},
              core::TrackerPolicy{1, 1, util::Duration{5000}, false});
  core::Report r;
  r.backend = "cache";
  r.verdict = {core::State::up, core::Failure::none, "ok"};
  r.lag = core::LagEstimate{0.01, "caught up"};
  r.manager_votes = core::ManagerVotes{3, 2, 1};
  const auto t0 = probe::Clock::now();
  cache.record(r, t0, {3, {{"max_age", 1}}});
  core::Report failing = r;
  failing.verdict = {core::State::down, core::Failure::timeout, "slow"};
  cache.record(failing, t0, {3, {{"max_age", 1}}});
  cache.record(r, t0, {3, {{"max_age", 1}}});
  AgentStatus agent;
  agent.agent_connections_dropped = {{"limit", 0}, {"write_timeout", 2}};
  agent.http_connections_dropped = {{"not_allowed", 1}, {"deadline", 0}};
  agent.sentinel_subscriptions = {{"cache", 3}};
  const std::string text = render_metrics(cache.all(), agent, t0);

  const auto [typed, sampled] = families(text);
  std::set<std::string> declared;
  for (const auto& m : k_metrics) {
    CHECK(declared.insert(std::string{m.name}).second); // declared once
    CHECK(text.find(util::format("# HELP {} {}\n", m.name, m.help)) != std::string::npos);
  }
  CHECK(typed == declared);
  CHECK(sampled == declared); // each has a sample here, and every sample is declared
  CHECK(text.find("dbcheck_manager_votes{backend=\"cache\",cluster=\"cache\",vote=\"this\"} 2\n"
                  "dbcheck_manager_votes{backend=\"cache\",cluster=\"cache\",vote=\"other\"} 1\n"
                  "dbcheck_manager_votes{backend=\"cache\",cluster=\"cache\",vote=\"none\"} 0\n") !=
        std::string::npos);
  CHECK(text.find("dbcheck_agent_connections_dropped_total{reason=\"write_timeout\"} 2\n") !=
        std::string::npos);
  CHECK(text.find("dbcheck_sentinel_subscriptions_total{cluster=\"cache\"} 3\n") !=
        std::string::npos);
}

TEST_CASE("docs/agent.md names every declared metric", "[agent][metrics]") {
  std::ifstream in(std::string{DBCHECK_SOURCE_DIR} + "/docs/agent.md");
  REQUIRE(in);
  std::stringstream doc;
  doc << in.rdbuf();
  for (const auto& m : k_metrics) {
    INFO(m.name);
    CHECK(doc.str().find("`" + std::string{m.name}) != std::string::npos);
  }
}
