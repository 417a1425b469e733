// The only file that includes asio (a heavy header).
#include "agent_server.hpp"

#include "admission.hpp"
#include "agent_reply.hpp"
#include "log_line.hpp"

#include <util/format.hpp>
#include <util/owned_fd.hpp>

#include <asio.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <thread>
#include <utility>

namespace dbcheck::agent {
namespace {

using asio::ip::tcp;
using namespace std::chrono_literals;

// A poller that sends nothing (no agent-send) is answered after this; one that trickles its
// line is answered (or dropped) then too, so a slow client holds a socket, never an answer.
constexpr auto k_read_window = 100ms;
// Every connection is closed this long after it was accepted, answered or not: a client that
// does not read its answer holds a socket for a second at most.
constexpr auto k_deadline = 1s;
constexpr std::size_t k_max_line = 512;
// Connections accepted in one go, at most: the listen queue's length (listen(4096)).
constexpr std::size_t k_drain_max = 4096;
// Pending connections made sessions between two looks at the listen queue.
constexpr std::size_t k_settle_batch = 64;

using util::OwnedFd;

// The port's counts, and their log: what they admit is admission.hpp's to decide.
struct Counters : PortCounters<asio::ip::address> {
  // Counts one drop, and logs it with its reason when a line is due.
  void drop(Drop why) {
    if (const auto count = PortCounters::drop(why, std::chrono::steady_clock::now())) {
      log_event("warn", "agent-check connection dropped",
                {{"reason", std::string{k_drop_names[static_cast<std::size_t>(why)]}},
                 {"count_since_last_line", std::to_string(*count)}});
    }
  }
};

// Closes `fd` with a reset instead of an orderly close (see reset_on_refusal).
void reset_close(OwnedFd fd) {
  const linger abort{1, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
}

// An accepted connection that had not sent its line when it was accepted: it waits here until
// a Session takes it, after every connection that had (see Impl::drain).
struct Pending {
  OwnedFd fd;
  asio::ip::tcp::endpoint peer;
  std::chrono::steady_clock::time_point accepted;
  std::string got; // what it had sent of its line (no '\n' yet)
};

class Session : public std::enable_shared_from_this<Session> {
public:
  // Takes over `p`'s descriptor and its place in `counters` (open, by_address), waiting for
  // its line within `limits`; `serve_listen` is run before each answer this session computes
  // late.
  Session(tcp::socket socket, Pending p, const Responder& respond, Counters& counters,
          const AdmissionLimits& limits, const std::function<void()>& serve_listen)
      : m_socket(std::move(socket)), m_timer(m_socket.get_executor()), m_respond(respond),
        m_counters(counters), m_limits(limits), m_serve_listen(serve_listen),
        m_peer(p.peer.address()), m_accepted(p.accepted), m_used(p.got.size()) {
    std::copy(p.got.begin(), p.got.end(), m_buf.begin());
  }
  ~Session() {
    stop_waiting();
    m_counters.release(m_peer);
  }

  void start() {
    // Its line may have come since it was accepted: answer it now, without a queued read.
    asio::error_code early;
    m_socket.non_blocking(true, early);
    if (!early) {
      m_used +=
          m_socket.read_some(asio::buffer(m_buf.data() + m_used, m_buf.size() - m_used), early);
    }
    const std::string_view got{m_buf.data(), m_used};
    if (got.find('\n') != std::string_view::npos) {
      answer(got);
      return;
    }
    if (m_used == m_buf.size()) {
      reply("down #request line too long\n");
      return;
    }
    if (const auto why =
            refuse_waiting(m_counters.waiting.total(), m_counters.waiting.of(m_peer), m_limits)) {
      m_counters.drop(*why);
      if (reset_on_refusal(*why)) {
        asio::error_code ignored;
        m_socket.set_option(asio::socket_base::linger(true, 0), ignored);
      }
      close();
      return;
    }
    m_counters.waiting.add(m_peer);
    m_waiting = true;
    m_timer.expires_at(m_accepted + k_read_window);
    m_timer.async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (!ec && !self->m_answered) {
        // Silent clients' windows end in bursts (they came in bursts): each answer and close
        // costs tens of microseconds, so the listen queue is served first, every time, and a
        // poller arriving meanwhile waits for one of them, not a thousand.
        self->m_serve_listen();
        self->answer(std::string_view{self->m_buf.data(), self->m_used});
      }
    });
    read();
  }

private:
  void read() {
    m_socket.async_read_some(
        asio::buffer(m_buf.data() + m_used, m_buf.size() - m_used),
        [self = shared_from_this()](const asio::error_code& ec, std::size_t n) {
          if (self->m_answered) {
            return;
          }
          if (ec) {
            // The poller closed its side: answer what it sent, if anything; else just close.
            if (self->m_used > 0) {
              self->answer(std::string_view{self->m_buf.data(), self->m_used});
            } else {
              self->close();
            }
            return;
          }
          self->m_used += n;
          const std::string_view got{self->m_buf.data(), self->m_used};
          if (got.find('\n') != std::string_view::npos) {
            self->answer(got);
          } else if (self->m_used == self->m_buf.size()) {
            self->reply("down #request line too long\n");
          } else {
            self->read();
          }
        });
  }

  void answer(std::string_view request) { reply(m_respond(backend_from_request(request))); }

  void reply(std::string line) {
    m_answered = true;
    stop_waiting();
    m_reply = std::move(line);
    // A one-line answer fits the socket's send buffer: written now, the connection is done
    // without a timer or a queued completion.
    asio::error_code now;
    const std::size_t sent = m_socket.write_some(asio::buffer(m_reply), now);
    if (!now && sent == m_reply.size()) {
      close();
      return;
    }
    if (!now) {
      m_reply.erase(0, sent);
    }
    m_timer.cancel();
    m_timer.expires_at(m_accepted + k_deadline);
    m_timer.async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (!ec) {
        self->m_counters.drop(Drop::write_timeout);
        self->close(); // a poller that does not read its answer loses it
      }
    });
    asio::async_write(m_socket, asio::buffer(m_reply),
                      [self = shared_from_this()](const asio::error_code&, std::size_t) {
                        self->m_timer.cancel();
                        self->close();
                      });
  }

  void close() {
    m_answered = true; // a poller that left gets no late answer computed for it
    stop_waiting();
    m_timer.cancel();
    asio::error_code ignored;
    m_socket.shutdown(tcp::socket::shutdown_both, ignored);
    m_socket.close(ignored);
  }

  // The line arrived (or never will): this session no longer counts as waiting for it.
  void stop_waiting() {
    if (!m_waiting) {
      return;
    }
    m_waiting = false;
    m_counters.waiting.remove(m_peer);
  }

  tcp::socket m_socket;
  asio::steady_timer m_timer;
  const Responder& m_respond;
  Counters& m_counters;
  const AdmissionLimits& m_limits;
  const std::function<void()>& m_serve_listen;
  asio::ip::address m_peer;
  std::chrono::steady_clock::time_point m_accepted;
  std::array<char, k_max_line> m_buf{};
  std::size_t m_used = 0;
  bool m_answered = false;
  bool m_waiting = false; // counted in m_counters.waiting
  std::string m_reply;
};

} // namespace

struct AgentServer::Impl {
  util::HostPort listen;
  std::vector<util::Cidr> allow;
  AdmissionLimits limits;
  Responder respond;
  Counters counters;           // before io: sessions destroyed with io still count down into it
  std::deque<Pending> pending; // accepted, not yet sessions; in counters.open
  bool settling = false;       // a settle() is posted
  const std::function<void()> serve_listen = [this] { drain(); };
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  asio::steady_timer backoff{io};
  std::thread thread;

  // Accepts every connection waiting in the listen queue (at most k_drain_max) and answers
  // at once each that has sent its line; the others wait in `pending`. Under a flood of
  // silent connections the kernel's queue is first-come, first-served: HAProxy's check,
  // behind a thousand silent neighbours, waits only for their accept() here, not for their
  // sessions, timers and closes. False when the process is out of descriptors (pause then).
  bool drain() {
    for (std::size_t i = 0; i < k_drain_max; ++i) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      const int fd = ::accept4(acceptor.native_handle(), reinterpret_cast<sockaddr*>(&addr), &len,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) {
          continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          return true;
        }
        // Out of descriptors (EMFILE/ENFILE) or memory: the caller pauses instead of
        // spinning, which would starve the probers of CPU (and they share the fd table).
        counters.drop(Drop::accept_error);
        return false;
      }
      intake(OwnedFd{fd}, addr, len);
    }
    return true;
  }

  // Refuses, answers, or queues one accepted connection.
  void intake(OwnedFd fd, const sockaddr_storage& addr, socklen_t len) {
    tcp::endpoint peer;
    // An endpoint holds IPv4 and IPv6, the only families address_allowed lets in.
    const bool allowed = len <= peer.capacity() &&
                         util::address_allowed(allow, reinterpret_cast<const sockaddr*>(&addr));
    if (allowed) {
      std::memcpy(peer.data(), &addr, len);
      peer.resize(len);
    }
    const Arrival arrival{allowed, counters.open(),
                          allowed ? counters.by_address.of(peer.address()) : 0};
    if (const auto why = refuse_at_accept(arrival, limits)) {
      counters.drop(*why);
      if (reset_on_refusal(*why)) {
        reset_close(std::move(fd)); // before a byte is read or written
      }
      return;
    }
    std::array<char, k_max_line> buf; // NOLINT: filled by recv
    const ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      return; // it left without a word
    }
    const std::string_view got{buf.data(), n > 0 ? static_cast<std::size_t>(n) : 0};
    if (got.find('\n') != std::string_view::npos) {
      const std::string line = respond(backend_from_request(got));
      const ssize_t sent = ::send(fd.get(), line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (sent >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        // Answered and closed, the common case for a poller (a fresh socket's send buffer
        // holds a line; an error means the poller left).
        ::shutdown(fd.get(), SHUT_RDWR);
        return;
      }
      // Nothing written, the buffer full (it cannot be, in practice): a session retries and
      // bounds the wait.
    }
    counters.hold(peer.address());
    pending.push_back({std::move(fd), peer, std::chrono::steady_clock::now(), std::string{got}});
    if (!settling) {
      settling = true;
      asio::post(io, [this] { settle(); });
    }
  }

  // Hands up to k_settle_batch pending connections to sessions, then serves the listen queue
  // again before the next batch: sessions are the slow part (a timer, an epoll registration,
  // an answer and a close each), and a poller arriving meanwhile must not wait for them all.
  void settle() {
    for (std::size_t i = 0; i < k_settle_batch && !pending.empty(); ++i) {
      // Newest first: a poller's line comes a moment after its connection, so the newest are
      // the likeliest to be answered at once (measured under the abuse test: agent-check p99
      // 4-6 ms this way, 6-8 ms oldest first). The oldest wait for the flood's gap; a silent
      // poller among them is answered late, not lost.
      Pending p = std::move(pending.back());
      pending.pop_back();
      tcp::socket socket(io);
      asio::error_code ec;
      socket.assign(p.peer.protocol(), p.fd.get(), ec);
      if (ec) {
        counters.release(p.peer.address());
        continue;
      }
      p.fd.release();
      std::make_shared<Session>(std::move(socket), std::move(p), respond, counters, limits,
                                serve_listen)
          ->start();
    }
    drain();
    if (pending.empty()) {
      settling = false;
    } else {
      asio::post(io, [this] { settle(); });
    }
  }

  // Waits for the listen queue to have a connection, then drains it.
  void accept() {
    acceptor.async_wait(tcp::acceptor::wait_read, [this](const asio::error_code& ec) {
      if (ec == asio::error::operation_aborted) {
        return;
      }
      if (ec || !drain()) {
        if (ec) {
          counters.drop(Drop::accept_error);
        }
        backoff.expires_after(50ms);
        backoff.async_wait([this](const asio::error_code& e) {
          if (!e) {
            accept();
          }
        });
        return;
      }
      accept();
    });
  }
};

AgentServer::AgentServer(util::HostPort listen, std::vector<util::Cidr> allow,
                         std::size_t max_connections, Responder respond)
    : m_impl(std::make_unique<Impl>()) {
  m_impl->listen = std::move(listen);
  m_impl->allow = std::move(allow);
  m_impl->limits.max_connections = max_connections;
  m_impl->respond = std::move(respond);
}

AgentServer::~AgentServer() {
  stop();
}

tl::expected<void, std::string> AgentServer::start() {
  Impl& s = *m_impl;
  asio::error_code ec;
  const auto address = asio::ip::make_address(s.listen.host, ec);
  if (ec) {
    return tl::make_unexpected(
        util::format("agent listen address {}: {}", util::to_string(s.listen), ec.message()));
  }
  const tcp::endpoint endpoint{address, s.listen.port};
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) {
    s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  }
  if (!ec) {
    s.acceptor.bind(endpoint, ec);
  }
  if (!ec) {
    s.acceptor.listen(4096, ec);
  }
  if (!ec) {
    s.acceptor.non_blocking(true, ec);
  }
  if (ec) {
    return tl::make_unexpected(
        util::format("cannot listen on {}: {}", util::to_string(s.listen), ec.message()));
  }
  s.accept();
  s.thread = std::thread([&s] { s.io.run(); });
  return {};
}

void AgentServer::stop() {
  if (!m_impl || !m_impl->thread.joinable()) {
    return;
  }
  m_impl->io.stop();
  m_impl->thread.join();
  for (const Pending& p : m_impl->pending) {
    m_impl->counters.release(p.peer.address());
  }
  m_impl->pending.clear(); // closes them
  asio::error_code ignored;
  m_impl->acceptor.close(ignored); // the thread is gone: safe to close here, and it happens
}

std::size_t AgentServer::open_connections() const {
  return m_impl->counters.open();
}

std::uint64_t AgentServer::refused_connections() const {
  return m_impl->counters.dropped(Drop::limit);
}

std::map<std::string, std::uint64_t> AgentServer::dropped_connections() const {
  return m_impl->counters.dropped();
}

} // namespace dbcheck::agent
