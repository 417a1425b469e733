#pragma once
// The agent-check port (asio stays inside agent_server.cpp): read the optional agent-send
// line, answer one line, close.

#include <util/cidr.hpp>
#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dbcheck::agent {

// Turns the requested backend name ("" when the poller sent none) into the reply line.
using Responder = std::function<std::string(std::string_view backend)>;

class AgentServer {
public:
  // --- Interface ---

  // A server for `listen`, answering clients in `allow` (others are reset at accept) with
  // `respond`; at most `max_connections` open at once (1024 per address; while 1024 wait for
  // their line, 64 waiting per address), each for at most one second.
  AgentServer(util::HostPort listen, std::vector<util::Cidr> allow, std::size_t max_connections,
              Responder respond);
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;
  // Stops the server.
  ~AgentServer();

  // Binds and starts serving on a thread of its own; an error names the address and cause.
  tl::expected<void, std::string> start();

  // Stops accepting, closes every connection, joins the thread.
  void stop();

  // Connections open right now, and refused for the limit since start (for /metrics).
  std::size_t open_connections() const;
  std::uint64_t refused_connections() const;
  // Connections ended without a delivered answer since start, by reason ("limit",
  // "write_timeout", "accept_error", "not_allowed", "address_limit": more than 1024 open from
  // one address, or 64 waiting for their line while 1024 wait in all); each is also logged (a
  // burst as one line per 10 s).
  std::map<std::string, std::uint64_t> dropped_connections() const;

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

} // namespace dbcheck::agent
