#pragma once
// The agent's HTTP port (libmicrohttpd stays inside http_server.cpp): GET, HEAD and OPTIONS
// routed to one handler, for allowed clients only, each connection bounded in time.

#include <config/secret.hpp>
#include <util/cidr.hpp>
#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dbcheck::agent {

// One response.
struct HttpAnswer {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Answers one request for `path` (method already checked: GET, HEAD or OPTIONS).
using HttpHandler = std::function<HttpAnswer(std::string_view path)>;

// Where and for whom the HTTP port serves.
struct HttpServerOptions {
  util::HostPort listen;
  std::vector<util::Cidr> allow;       // clients admitted; others are closed at accept
  std::optional<std::string> cert_pem; // with key_pem: serve HTTPS
  config::Secret key_pem;
};

class HttpServer {
public:
  // --- Interface ---

  // A server with `options` calling `handler`; not running yet.
  HttpServer(HttpServerOptions options, HttpHandler handler);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  // Stops the server.
  ~HttpServer();

  // Binds and serves on libmicrohttpd's own thread; an error names the address.
  tl::expected<void, std::string> start();

  // Stops serving.
  void stop();

  // Connections closed unanswered since start, by reason ("not_allowed", "deadline": not
  // answered a second after accept, e.g. a client trickling its request).
  std::map<std::string, std::uint64_t> dropped_connections() const;

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

} // namespace dbcheck::agent
