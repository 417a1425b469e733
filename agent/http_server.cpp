// The only file that includes microhttpd.h.
#include "http_server.hpp"

#include "admission.hpp"
#include "log_line.hpp"

#include <util/format.hpp>

#include <microhttpd.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace dbcheck::agent {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A connection that has not been answered this long after accept is shut down, whatever it
// is doing: libmicrohttpd's own timeout only measures inactivity, which a client sending one
// byte a second never reaches.
constexpr auto k_answer_deadline = 1s;
// A kept-alive connection must have its next answer this long after the previous one, or it is
// shut down (idle, or trickling its next request). Not a whole second: a poller asking once a
// second (or every 2 s) must not send its request just as the connection is being closed.
constexpr auto k_keepalive_deadline = 1500ms;
constexpr auto k_sweep_every = 100ms;
// libmicrohttpd's own inactivity timeout, seconds: beyond the deadlines above, which cut first.
constexpr unsigned k_idle_timeout_s = 2;
// One address holds at most admission's k_per_address connections, as on the agent-check port:
// a neighbour inside `allow` then holds at most a quarter of this port, each connection for the
// deadline above at most.
constexpr unsigned k_max_connections = 4096;
// Each connection's memory pool (request line and headers, the answer's headers; the body is
// sent from the response): libmicrohttpd's default 32 KiB would make 4,096 kept-alive
// connections 128 MiB of RSS. A check's request is a few hundred bytes.
constexpr std::size_t k_connection_memory = 16 * 1024;

MHD_Result handle(void* cls, MHD_Connection* connection, const char* url, const char* method,
                  const char* /*version*/, const char* /*upload_data*/, size_t* upload_data_size,
                  void** con_cls) {
  // The first call comes with the headers: answering from it makes libmicrohttpd 0.9.75 close
  // the connection after the answer (a response queued before the request was read to its
  // end), so HTTP/1.1 keep-alive would never happen. Answer from the second call, which comes
  // at once (in the same turn) for a request without a body.
  static int s_headers_seen;
  if (*con_cls == nullptr) {
    *con_cls = &s_headers_seen;
    return MHD_YES;
  }
  if (*upload_data_size != 0) {
    *upload_data_size = 0; // a body (none expected): discarded
    return MHD_YES;
  }
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

struct HttpServer::Impl {
  HttpServerOptions options;
  HttpHandler handler;
  MHD_Daemon* daemon = nullptr;

  // Open connections by libmicrohttpd's handle: our own duplicate of the socket (so shutting it
  // down can never hit a descriptor number reused after libmicrohttpd closed its own), when it
  // was accepted or last answered, and whether it was answered (kept alive) yet.
  struct Open {
    int fd = -1;
    Clock::time_point since;
    bool answered = false;
    bool cut = false;
  };
  std::mutex mutex;
  std::unordered_map<MHD_Connection*, Open> open;
  std::condition_variable wake;
  bool stopping = false;
  std::thread sweeper;
  std::atomic<std::uint64_t> not_allowed{0};
  std::atomic<std::uint64_t> cut{0};

  static MHD_Result admit(void* cls, const sockaddr* addr, socklen_t /*len*/) {
    auto& self = *static_cast<Impl*>(cls);
    if (util::address_allowed(self.options.allow, addr)) {
      return MHD_YES;
    }
    if (self.not_allowed.fetch_add(1) % 1000 == 0) {
      // One line per thousand refusals: a scan is visible, a flood cannot drown the log.
      log_event("warn", "HTTP connection refused: client not in agent.allow",
                {{"refused_so_far", std::to_string(self.not_allowed.load())}});
    }
    return MHD_NO;
  }

  static void notify(void* cls, MHD_Connection* c, void** /*socket_context*/,
                     MHD_ConnectionNotificationCode code) {
    auto& self = *static_cast<Impl*>(cls);
    std::lock_guard lock(self.mutex);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      const MHD_ConnectionInfo* info =
          MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
      const int fd = info != nullptr ? fcntl(info->connect_fd, F_DUPFD_CLOEXEC, 0) : -1;
      self.open[c] = Open{fd, Clock::now(), false, false};
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
      if (const auto it = self.open.find(c); it != self.open.end()) {
        if (it->second.fd >= 0) {
          ::close(it->second.fd);
        }
        self.open.erase(it);
      }
    }
  }

  // An answer went out on `c`: its deadline restarts, as a kept-alive connection's.
  static void completed(void* cls, MHD_Connection* c, void** /*con_cls*/,
                        MHD_RequestTerminationCode code) {
    if (code != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
      return;
    }
    auto& self = *static_cast<Impl*>(cls);
    std::lock_guard lock(self.mutex);
    if (const auto it = self.open.find(c); it != self.open.end()) {
      it->second.since = Clock::now();
      it->second.answered = true;
    }
  }

  // Shuts down every connection past its deadline (k_answer_deadline after accept, or
  // k_keepalive_deadline after its last answer), every k_sweep_every, until stopped.
  void sweep() {
    std::unique_lock lock(mutex);
    while (!wake.wait_for(lock, k_sweep_every, [this] { return stopping; })) {
      const auto now = Clock::now();
      for (auto& [c, o] : open) {
        if (!o.cut && o.fd >= 0 &&
            now - o.since >= (o.answered ? Clock::duration{k_keepalive_deadline}
                                         : Clock::duration{k_answer_deadline})) {
          // libmicrohttpd sees the end of the stream on its next poll and closes the connection.
          ::shutdown(o.fd, SHUT_RDWR);
          o.cut = true;
          if (!o.answered) {
            ++cut; // a kept-alive connection closed while idle dropped nothing
          }
        }
      }
    }
  }
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler)
    : m_impl(std::make_unique<Impl>()) {
  m_impl->options = std::move(options);
  m_impl->handler = std::move(handler);
}

HttpServer::~HttpServer() {
  stop();
}

tl::expected<void, std::string> HttpServer::start() {
  Impl& s = *m_impl;
  const util::HostPort& listen = s.options.listen;
  sockaddr_in v4{};
  sockaddr_in6 v6{};
  const sockaddr* addr = nullptr;
  unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
  if (inet_pton(AF_INET, listen.host.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(listen.port);
    addr = reinterpret_cast<const sockaddr*>(&v4);
  } else if (inet_pton(AF_INET6, listen.host.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(listen.port);
    addr = reinterpret_cast<const sockaddr*>(&v6);
    flags |= MHD_USE_IPv6;
  } else {
    return tl::make_unexpected(
        util::format("http_listen {}: not an IP address", util::to_string(listen)));
  }
  const bool tls = s.options.cert_pem && !s.options.key_pem.empty();
  if (tls) {
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
      return tl::make_unexpected("this libmicrohttpd was built without TLS: cannot serve HTTPS");
    }
    flags |= MHD_USE_TLS;
  }
  // The TLS options are passed only when set: libmicrohttpd reads them as a pair.
  const MHD_OptionItem tls_options[] = {
      {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0,
       tls ? const_cast<char*>(s.options.cert_pem->c_str()) : nullptr},
      {tls ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0,
       tls ? const_cast<char*>(s.options.key_pem.reveal().c_str()) : nullptr},
      {MHD_OPTION_END, 0, nullptr},
  };
  s.daemon = MHD_start_daemon(
      flags, listen.port, &Impl::admit, &s, &handle, &s.handler, MHD_OPTION_SOCK_ADDR, addr,
      MHD_OPTION_CONNECTION_LIMIT, k_max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
      static_cast<unsigned>(k_per_address), MHD_OPTION_CONNECTION_TIMEOUT, k_idle_timeout_s,
      MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096U, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
      k_connection_memory, MHD_OPTION_NOTIFY_CONNECTION, &Impl::notify, &s,
      MHD_OPTION_NOTIFY_COMPLETED, &Impl::completed, &s, MHD_OPTION_ARRAY, tls_options,
      MHD_OPTION_END);
  if (s.daemon == nullptr) {
    return tl::make_unexpected(util::format("cannot serve {} on {}: {}", tls ? "HTTPS" : "HTTP",
                                            util::to_string(listen), std::strerror(errno)));
  }
  s.stopping = false;
  s.sweeper = std::thread([&s] { s.sweep(); });
  return {};
}

void HttpServer::stop() {
  if (!m_impl || m_impl->daemon == nullptr) {
    return;
  }
  {
    std::lock_guard lock(m_impl->mutex);
    m_impl->stopping = true;
  }
  m_impl->wake.notify_all();
  m_impl->sweeper.join();
  MHD_stop_daemon(m_impl->daemon);
  m_impl->daemon = nullptr;
}

std::map<std::string, std::uint64_t> HttpServer::dropped_connections() const {
  return {{"not_allowed", m_impl->not_allowed.load()}, {"deadline", m_impl->cut.load()}};
}

} // namespace dbcheck::agent
