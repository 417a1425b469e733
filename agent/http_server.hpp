#pragma once
// The agent's HTTP port (libmicrohttpd stays inside http_server.cpp): GET, HEAD and OPTIONS
// routed to one handler.

#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <functional>
#include <string>
#include <string_view>

struct MHD_Daemon; // libmicrohttpd, kept out of this header

namespace dbcheck::agent {

// One response.
struct HttpAnswer {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Answers one request for `path` (method already checked: GET, HEAD or OPTIONS).
using HttpHandler = std::function<HttpAnswer(std::string_view path)>;

class HttpServer {
public:
  // --- Interface ---

  // A server for `listen` calling `handler`; not running yet.
  HttpServer(util::HostPort listen, HttpHandler handler);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  // Stops the server.
  ~HttpServer();

  // Binds and serves on libmicrohttpd's own thread; an error names the address.
  tl::expected<void, std::string> start();

  // Stops serving.
  void stop();

private:
  util::HostPort m_listen;
  HttpHandler m_handler;
  MHD_Daemon* m_daemon = nullptr;
};

} // namespace dbcheck::agent
