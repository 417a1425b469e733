#include "http_routes.hpp"

#include <util/format.hpp>

#include <algorithm>

namespace dbcheck::agent {

HttpRoute route_http_path(std::string_view path) {
  if (path == "/live") {
    return {HttpRoute::Page::live, {}};
  }
  if (path == "/health") {
    return {HttpRoute::Page::health, {}};
  }
  if (path == "/metrics") {
    return {HttpRoute::Page::metrics, {}};
  }
  constexpr std::string_view prefix = "/backend/";
  if (path.substr(0, prefix.size()) == prefix) {
    return {HttpRoute::Page::backend, std::string{path.substr(prefix.size())}};
  }
  return {HttpRoute::Page::not_found, {}};
}

HttpAnswer answer_http(const HttpRoute& route, const std::vector<BackendSnapshot>& backends,
                       const AgentStatus& agent, probe::Clock::time_point now) {
  switch (route.page) {
  case HttpRoute::Page::live:
    return {200, "text/plain; charset=utf-8", "alive\n"};
  case HttpRoute::Page::health:
    return {200, "application/json", render_health(backends, agent, now)};
  case HttpRoute::Page::metrics:
    return {200, "text/plain; version=0.0.4; charset=utf-8", render_metrics(backends, agent, now)};
  case HttpRoute::Page::backend: {
    const auto snap = std::find_if(backends.begin(), backends.end(), [&](const BackendSnapshot& s) {
      return s.backend == route.backend;
    });
    if (snap == backends.end()) {
      return {404, "text/plain; charset=utf-8",
              util::format("unknown backend {}\n", route.backend)};
    }
    // A drain is not a failure: the regular check stays green while the agent drains.
    const bool up = fresh(*snap, agent, now) && snap->reported.state == core::State::up;
    return {up ? 200 : 503, "text/plain; charset=utf-8", render_backend_line(*snap, agent, now)};
  }
  case HttpRoute::Page::not_found:
    break;
  }
  return {404, "text/plain; charset=utf-8",
          "not found: /backend/<name>, /health, /live, /metrics\n"};
}

} // namespace dbcheck::agent
