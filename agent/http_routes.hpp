#pragma once
// What the HTTP port answers for a request path: pure (state in, answer out), so the routing is
// unit-tested and fuzzed without a socket.

#include "http_server.hpp"
#include "status_render.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace dbcheck::agent {

// The page a request path asks for.
struct HttpRoute {
  enum class Page { live, health, metrics, backend, not_found };
  Page page = Page::not_found;
  std::string backend; // Page::backend: the name after "/backend/"
};

// --- Interface ---

// Maps a request path to its page: "/live", "/health", "/metrics", "/backend/<name>".
HttpRoute route_http_path(std::string_view path);

// The answer to `route` at `now`. `backends` holds what the page may show: every tracked
// backend for /health and /metrics; for /backend/<name>, the tracked ones to find it in.
HttpAnswer answer_http(const HttpRoute& route, const std::vector<BackendSnapshot>& backends,
                       const AgentStatus& agent, probe::Clock::time_point now);

} // namespace dbcheck::agent
