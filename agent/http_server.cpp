// The only file that includes microhttpd.h.
#include "http_server.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>

#include <cstring>

namespace dbcheck::agent {
namespace {

MHD_Result handle(void* cls, MHD_Connection* connection, const char* url, const char* method,
                  const char* /*version*/, const char* /*upload_data*/,
                  size_t* /*upload_data_size*/, void** /*con_cls*/) {
  const auto& handler = *static_cast<const HttpHandler*>(cls);
  const std::string_view m{method};
  HttpAnswer answer;
  if (m == MHD_HTTP_METHOD_GET || m == MHD_HTTP_METHOD_HEAD || m == MHD_HTTP_METHOD_OPTIONS) {
    answer = handler(url);
  } else {
    answer = HttpAnswer{405, "text/plain; charset=utf-8", "method not allowed\n"};
  }
  MHD_Response* response = MHD_create_response_from_buffer(answer.body.size(), answer.body.data(),
                                                           MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) {
    return MHD_NO;
  }
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, answer.content_type.c_str());
  MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  const MHD_Result r =
      MHD_queue_response(connection, static_cast<unsigned int>(answer.status), response);
  MHD_destroy_response(response);
  return r;
}

} // namespace

HttpServer::HttpServer(util::HostPort listen, HttpHandler handler)
    : m_listen(std::move(listen)), m_handler(std::move(handler)) {}

HttpServer::~HttpServer() {
  stop();
}

tl::expected<void, std::string> HttpServer::start() {
  sockaddr_in v4{};
  sockaddr_in6 v6{};
  const sockaddr* addr = nullptr;
  unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
  if (inet_pton(AF_INET, m_listen.host.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(m_listen.port);
    addr = reinterpret_cast<const sockaddr*>(&v4);
  } else if (inet_pton(AF_INET6, m_listen.host.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(m_listen.port);
    addr = reinterpret_cast<const sockaddr*>(&v6);
    flags |= MHD_USE_IPv6;
  } else {
    return tl::make_unexpected(
        fmt::format("http_listen {}: not an IP address", util::to_string(m_listen)));
  }
  m_daemon =
      MHD_start_daemon(flags, m_listen.port, nullptr, nullptr, &handle, &m_handler,
                       MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_CONNECTION_LIMIT, 1000U,
                       // One client cannot hold every slot and fail the httpchk backstop.
                       MHD_OPTION_PER_IP_CONNECTION_LIMIT, 64U, MHD_OPTION_CONNECTION_TIMEOUT, 2U,
                       MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024U, MHD_OPTION_END);
  if (m_daemon == nullptr) {
    return tl::make_unexpected(fmt::format("cannot serve HTTP on {}: {}", util::to_string(m_listen),
                                           std::strerror(errno)));
  }
  return {};
}

void HttpServer::stop() {
  if (m_daemon != nullptr) {
    MHD_stop_daemon(m_daemon);
    m_daemon = nullptr;
  }
}

} // namespace dbcheck::agent
