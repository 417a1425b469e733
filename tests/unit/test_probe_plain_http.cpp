// The plain http:// client (probe::plain_get_all, libevent) against a one-connection-at-a-time
// server on 127.0.0.1 that answers what each test scripts: a good answer, garbage, answers too
// large or malformed, an interim answer, an endless chunk-size line, silence; and a port
// nobody listens on. The integration tests run the same cases
// through dbcheck against fake and real Patroni members.
#include "dbcheck_catch.hpp"

#include <probe/plain_http.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

using namespace dbcheck;

namespace {

// A TCP socket bound to an ephemeral port of 127.0.0.1 (its number into `port`); throws if it
// cannot be had.
int bind_loopback(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) {
      ::close(fd);
    }
    throw std::runtime_error("cannot bind on 127.0.0.1");
  }
  port = ntohs(addr.sin_port);
  return fd;
}

// Listens on 127.0.0.1; sends `answer` to each connection once its request is in, then holds
// the connection open until the test ends (`hold`) or closes it.
class ScriptedServer {
public:
  ScriptedServer(std::string answer, bool hold) : m_answer(std::move(answer)), m_hold(hold) {
    m_fd = bind_loopback(port);
    if (::listen(m_fd, 8) != 0) {
      ::close(m_fd);
      throw std::runtime_error("cannot listen on 127.0.0.1");
    }
    m_thread = std::thread([this] { serve(); });
  }
  ~ScriptedServer() {
    m_stop = true;
    m_thread.join();
    ::close(m_fd);
  }
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  std::string url(const std::string& path = "/cluster") const {
    return "http://127.0.0.1:" + std::to_string(port) + path;
  }
  int port = 0;
  std::atomic<int> requests{0};

private:
  void serve() {
    std::vector<int> open;
    while (!m_stop) {
      pollfd p{m_fd, POLLIN, 0};
      if (::poll(&p, 1, 20) != 1) {
        continue;
      }
      const int c = ::accept(m_fd, nullptr, nullptr);
      if (c < 0) {
        continue;
      }
      const timeval two_seconds{2, 0}; // a client that never sends cannot hold the test
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &two_seconds, sizeof two_seconds);
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) {
          break;
        }
        request.append(buf, static_cast<std::size_t>(n));
      }
      ++requests;
      (void)::send(c, m_answer.data(), m_answer.size(), MSG_NOSIGNAL);
      if (m_hold) {
        open.push_back(c);
      } else {
        ::close(c);
      }
    }
    for (const int c : open) {
      ::close(c);
    }
  }

  std::string m_answer;
  bool m_hold;
  int m_fd = -1;
  std::atomic<bool> m_stop{false};
  std::thread m_thread;
};

// A port on 127.0.0.1 bound for the test's whole life but never listened on: connects to it
// are refused, and no other process can take it meanwhile.
class RefusingPort {
public:
  RefusingPort() : m_fd(bind_loopback(port)) {}
  ~RefusingPort() { ::close(m_fd); }
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  int port = 0;

private:
  int m_fd = -1;
};

probe::HttpReply get_one(const std::string& url, util::Duration budget,
                         std::size_t max_body = 4096) {
  probe::HttpOptions options;
  options.max_body = max_body;
  auto replies = probe::plain_get_all({url}, options, probe::Deadline::in(budget),
                                      [](std::size_t, probe::HttpReply&) { return false; });
  REQUIRE(replies.size() == 1);
  return replies[0];
}

} // namespace

TEST_CASE("a plain GET reads a whole answer, chunked or not", "[probe][http]") {
  SECTION("Content-Length") {
    ScriptedServer s("HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n{\"members\": []}", false);
    const auto r = get_one(s.url(), util::Duration{2000});
    CHECK(r.attempt.error.empty());
    CHECK(r.attempt.status == 200);
    CHECK(r.body == "{\"members\": []}");
    CHECK(r.attempt.url == s.url());
  }
  SECTION("chunked, and a status other than 200 keeps its body") {
    ScriptedServer s("HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "5\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\n\r\n",
                     false);
    const auto r = get_one(s.url(), util::Duration{2000});
    CHECK(r.attempt.status == 503);
    CHECK(r.attempt.error == "HTTP 503");
    CHECK(r.body == "{\"a\": 1}");
  }
  SECTION("HTTP/1.0, the body ends with the connection") {
    ScriptedServer s("HTTP/1.0 200 OK\r\n\r\n{}", false);
    const auto r = get_one(s.url(), util::Duration{2000});
    CHECK(r.attempt.error.empty());
    CHECK(r.body == "{}");
  }
}

TEST_CASE("a plain GET refuses what is not an answer, saying why", "[probe][http]") {
  SECTION("nobody listens") {
    const RefusingPort refusing;
    const std::string origin = "127.0.0.1:" + std::to_string(refusing.port);
    const auto r = get_one("http://" + origin + "/", util::Duration{2000});
    CHECK(r.attempt.status == 0);
    CHECK_FALSE(r.attempt.timed_out);
    CHECK(r.attempt.error == "cannot connect to " + origin + ": connection refused");
  }
  SECTION("closed without a word: no stale errno quoted as the cause") {
    ScriptedServer s("", false);
    const auto r = get_one(s.url(), util::Duration{2000});
    CHECK(r.attempt.status == 0);
    CHECK(r.attempt.error ==
          "127.0.0.1:" + std::to_string(s.port) + " closed the connection before answering");
  }
  SECTION("an interim answer is refused at once, not collected") {
    std::string answers;
    for (int i = 0; i < 50; ++i) {
      answers += "HTTP/1.1 100 Continue\r\nX-Pad: " + std::string(60000, 'x') + "\r\n\r\n";
    }
    ScriptedServer s(answers, true);
    const auto r = get_one(s.url(), util::Duration{5000});
    CHECK(r.attempt.status == 100);
    CHECK_FALSE(r.attempt.timed_out);
    CHECK(r.attempt.error.find("sent an interim answer (100) to a GET") != std::string::npos);
  }
  SECTION("headers past the cap") {
    ScriptedServer s("HTTP/1.1 200 OK\r\nX-Pad: " + std::string(100000, 'x') + "\r\n\r\n{}", true);
    const auto r = get_one(s.url(), util::Duration{5000});
    CHECK(r.attempt.status == 200);
    CHECK(r.attempt.error.find("malformed headers, or more than") != std::string::npos);
  }
  SECTION("a malformed chunk size") {
    ScriptedServer s("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
                     true);
    const auto r = get_one(s.url(), util::Duration{5000});
    CHECK(r.attempt.status == 200);
    CHECK(r.attempt.error.find("chunked encoding malformed") != std::string::npos);
  }
  SECTION("an endless chunk-size line ends at the cap, not at the deadline") {
    ScriptedServer s(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(1 << 20, '1'), true);
    const auto r = get_one(s.url(), util::Duration{10000});
    CHECK(r.attempt.status == 200);
    CHECK_FALSE(r.attempt.timed_out);
    CHECK(r.attempt.error == "answer larger than 4096 bytes, or its chunked encoding malformed");
  }
  SECTION("not HTTP") {
    ScriptedServer s("SSH-2.0-OpenSSH_9.2\r\n\r\n", false);
    const auto r = get_one(s.url(), util::Duration{2000});
    CHECK(r.attempt.status == 0);
    CHECK(r.attempt.error.find("did not answer in HTTP") != std::string::npos);
  }
  SECTION("an announced body over the cap, refused at its headers") {
    ScriptedServer s("HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n{", true);
    const auto r = get_one(s.url(), util::Duration{2000});
    CHECK(r.attempt.status == 200); // the server's fault: a protocol failure, not the network's
    CHECK(r.attempt.error == "answer larger than 4096 bytes");
    CHECK(r.body.empty());
  }
  SECTION("a body over the cap without a length") {
    ScriptedServer s("HTTP/1.0 200 OK\r\n\r\n" + std::string(10000, ' '), false);
    const auto r = get_one(s.url(), util::Duration{2000});
    CHECK(r.attempt.error == "answer larger than 4096 bytes");
  }
  SECTION("cut in the middle") {
    ScriptedServer s("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"members\"", false);
    const auto r = get_one(s.url(), util::Duration{2000});
    CHECK(r.attempt.status == 200);
    CHECK(r.attempt.error.find("closed the connection in the middle of its answer") !=
          std::string::npos);
  }
  SECTION("not a plain URL: never asked") {
    const auto r = get_one("https://127.0.0.1:1/", util::Duration{2000});
    CHECK(r.attempt.error == "not a plain http:// URL to an IP address");
  }
}

TEST_CASE("a plain GET ends at the deadline or when the answers in decide", "[probe][http]") {
  ScriptedServer silent("", true); // accepts, reads the request, never answers
  SECTION("silence: timed out by the deadline") {
    const auto t0 = probe::Clock::now();
    const auto r = get_one(silent.url(), util::Duration{300});
    const auto took = probe::Clock::now() - t0;
    CHECK(r.attempt.timed_out);
    CHECK(r.attempt.error == "no answer before the deadline");
    CHECK(took >= std::chrono::milliseconds{290});
    CHECK(took < std::chrono::milliseconds{1500}); // the deadline ends it, not libevent's 45 s
  }
  SECTION("the first answer decides: the silent one is not waited for") {
    ScriptedServer good("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", false);
    std::vector<std::size_t> handed;
    const auto t0 = probe::Clock::now();
    const auto replies = probe::plain_get_all({silent.url(), good.url()}, {},
                                              probe::Deadline::in(util::Duration{5000}),
                                              [&](std::size_t i, probe::HttpReply& r) {
                                                handed.push_back(i);
                                                return r.attempt.error.empty();
                                              });
    CHECK(probe::Clock::now() - t0 < std::chrono::milliseconds{2500});
    CHECK(handed == std::vector<std::size_t>{1});
    CHECK(replies[1].body == "{}");
    CHECK(replies[0].attempt.error == "not needed: the answers already in decide");
    CHECK_FALSE(replies[0].attempt.timed_out);
  }
}
