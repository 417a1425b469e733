// agent/http_routes: a request path (libmicrohttpd hands it over decoded) -> page -> answer.
// Input: the path, then optionally '\n' and a reason text that the backends' verdicts carry
// (a server's error message reaches /health and /backend/<name> verbatim).
#include "fuzz_check.hpp"
#include "http_routes.hpp"

#include <nlohmann/json.hpp>

using dbcheck::fuzz::require;
using namespace dbcheck;
using namespace dbcheck::agent;

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const std::string_view input = dbcheck::fuzz::as_text(data, size);
  const std::size_t cut = input.find('\n');
  const std::string_view path = input.substr(0, cut);
  const std::string reason{cut == std::string_view::npos ? "leader" : input.substr(cut + 1)};

  const HttpRoute route = route_http_path(path);
  if (route.page == HttpRoute::Page::backend) {
    require("/backend/" + route.backend == path, "a backend route names what follows /backend/");
  } else {
    require(route.backend.empty(), "only backend routes carry a name");
  }

  const auto now = probe::Clock::now();
  BackendSnapshot up;
  up.backend = "pg_write";
  up.cluster = "pg";
  up.node = "10.0.0.1:5432";
  up.started = true;
  up.updated = now;
  up.reported = {core::State::up, core::Failure::none, reason};
  up.raw = up.reported;
  BackendSnapshot down = up;
  down.backend = "pg_read";
  down.role = config::Role::replica;
  down.reported = {core::State::down, core::Failure::lag, reason};
  BackendSnapshot never = up;
  never.backend = "redis_write";
  never.started = false;
  const std::vector<BackendSnapshot> all{up, down, never};
  AgentStatus agent;
  agent.drain_reason = reason;

  const HttpAnswer a = answer_http(route, all, agent, now);
  require(!a.body.empty() && a.body.back() == '\n', "every body ends with a newline");
  switch (route.page) {
  case HttpRoute::Page::live:
  case HttpRoute::Page::metrics:
    require(a.status == 200, "/live and /metrics answer 200");
    break;
  case HttpRoute::Page::health:
    require(a.status == 200, "/health answers 200");
    // Reasons are arbitrary bytes: the JSON must stay valid (invalid UTF-8 replaced).
    require(!nlohmann::json::parse(a.body, nullptr, false).is_discarded(), "/health is JSON");
    break;
  case HttpRoute::Page::backend:
    if (route.backend == "pg_write") {
      require(a.status == 200, "a fresh up backend answers 200");
    } else if (route.backend == "pg_read" || route.backend == "redis_write") {
      require(a.status == 503, "a down or never-probed backend answers 503");
    } else {
      require(a.status == 404, "an unknown backend answers 404");
    }
    break;
  case HttpRoute::Page::not_found:
    require(a.status == 404, "anything else answers 404");
    break;
  }
  return 0;
}
