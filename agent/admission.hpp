#pragma once
// Who the agent-check port lets in, and how it says no: the decision alone. The caller
// (agent_server.cpp) reads the sockets and the clock, keeps the counts, and acts on what these
// return (resets or closes, logs), so this is pure and unit-tested
// (tests/unit/test_agent_admission.cpp).

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace dbcheck::agent {

// Why a connection ended without a delivered answer.
enum class Drop { limit, write_timeout, accept_error, not_allowed, address_limit };
// The names of Drop's values, in its order (the /metrics label and the log's reason).
inline constexpr std::array<std::string_view, 5> k_drop_names = {
    "limit", "write_timeout", "accept_error", "not_allowed", "address_limit"};

// Open connections from one address, at most: a neighbour inside `allow` opening thousands
// costs the agent a reset each beyond this, not a session, while one HAProxy checking 1,000
// servers of this agent (one connection each, all at once after a stall) is never refused.
inline constexpr std::size_t k_per_address = 1024;
// Connections waiting for their line (none yet at accept): each costs a timer and, at the end
// of its read window, an answer, all in one burst for a flood of idle clients, ahead of
// HAProxy's checks. While k_waiting_total wait, an address with k_waiting_per_address waiting
// already has its further ones reset: ten thousand idle neighbours cost the agent about what 64
// per address did, while one HAProxy's 1,000 checks from one address (a line each, at most a
// moment behind the connection) all get through.
inline constexpr std::size_t k_waiting_total = 1024;
inline constexpr std::size_t k_waiting_per_address = 64;
// A burst of drops is logged once per this, with the count since the last line: under a flood
// every drop still counts (/metrics), and the log stays readable.
inline constexpr std::chrono::seconds k_drop_log_every{10};

// The limits one agent-check port admits connections under.
struct AdmissionLimits {
  std::size_t max_connections = 0; // open at once, in all (the configuration's)
  std::size_t per_address = k_per_address;
  std::size_t waiting_total = k_waiting_total;
  std::size_t waiting_per_address = k_waiting_per_address;
};

// What is known of a connection just accepted, before a byte is read.
struct Arrival {
  bool allowed = false;           // its address lies in `allow`
  std::size_t open = 0;           // connections open now, in all (this one not counted)
  std::size_t open_from_peer = 0; // of those, from its address
};

// --- Interface ---

// Why a connection just accepted is refused, if it is: not allowed first (before a byte is
// read or written), then the total limit, then its address's.
std::optional<Drop> refuse_at_accept(const Arrival& a, const AdmissionLimits& limits);

// Why a connection that has not sent its line is refused instead of waiting for it, if it is:
// while the connections waiting in all (`waiting`) are at their limit, an address already at
// its own (`waiting_from_peer`) gets no more waiting.
std::optional<Drop> refuse_waiting(std::size_t waiting, std::size_t waiting_from_peer,
                                   const AdmissionLimits& limits);

// True when a refusal for `why` resets the connection (SO_LINGER 0: the peer learns nothing,
// and neither side keeps it in TIME_WAIT or FIN_WAIT) rather than closing it: for who sent it
// (not allowed, too many from its address). One over the total limit is closed as usual.
bool reset_on_refusal(Drop why);

// When a drop is logged: the first of each reason at once, then at most one line per
// k_drop_log_every per reason, which counts the drops since the last line.
class DropLog {
public:
  // Counts one drop for `why` at `now`; the count to log (the drops since the last line, this
  // one included) when a line is due now, nothing otherwise.
  std::optional<std::uint64_t> count(Drop why, std::chrono::steady_clock::time_point now);

private:
  std::array<std::optional<std::chrono::steady_clock::time_point>, k_drop_names.size()>
      m_logged_at{};
  std::array<std::uint64_t, k_drop_names.size()> m_unlogged{};
};

// Connections counted per peer address and in all; an address whose count is back to zero is
// forgotten, so a port's map holds only the addresses connected now.
template <class Address>
class PeerCounts {
public:
  // Counts one more from `peer`.
  void add(const Address& peer) {
    ++m_by_peer[peer];
    ++m_total;
  }
  // Counts one fewer from `peer`; nothing for an address not counted.
  void remove(const Address& peer) {
    const auto it = m_by_peer.find(peer);
    if (it == m_by_peer.end()) {
      return;
    }
    --m_total;
    if (--it->second == 0) {
      m_by_peer.erase(it);
    }
  }
  // How many from `peer` (0 for an address not counted).
  std::size_t of(const Address& peer) const {
    const auto it = m_by_peer.find(peer);
    return it == m_by_peer.end() ? 0 : it->second;
  }
  // How many in all.
  std::size_t total() const { return m_total; }
  // How many addresses have a count above zero.
  std::size_t peers() const { return m_by_peer.size(); }

private:
  std::map<Address, std::size_t> m_by_peer;
  std::size_t m_total = 0;
};

// What one port counts: its open connections (in all and per address), those of them waiting
// for their line, and its drops by reason. open() and dropped() may be read from any thread;
// the rest belongs to the thread that serves the port.
template <class Address>
class PortCounters {
public:
  // Counts one more connection open from `peer` (accepted, not yet closed).
  void hold(const Address& peer) {
    ++m_open;
    by_address.add(peer);
  }
  // Counts one connection from `peer` closed.
  void release(const Address& peer) {
    --m_open;
    by_address.remove(peer);
  }
  // Counts one drop for `why` at `now`; the count to log, when a line is due (DropLog).
  std::optional<std::uint64_t> drop(Drop why, std::chrono::steady_clock::time_point now) {
    ++m_dropped[static_cast<std::size_t>(why)];
    return m_drop_log.count(why, now);
  }

  // Connections open now.
  std::size_t open() const { return m_open.load(); }
  // Drops for `why` so far.
  std::uint64_t dropped(Drop why) const { return m_dropped[static_cast<std::size_t>(why)].load(); }
  // Drops so far by reason, every reason named (k_drop_names).
  std::map<std::string, std::uint64_t> dropped() const {
    std::map<std::string, std::uint64_t> out;
    for (std::size_t i = 0; i < k_drop_names.size(); ++i) {
      out[std::string{k_drop_names[i]}] = m_dropped[i].load();
    }
    return out;
  }

  PeerCounts<Address> by_address; // open, per address (hold and release keep it)
  PeerCounts<Address> waiting;    // of those, waiting for their line (the caller keeps it)

private:
  std::atomic<std::size_t> m_open{0};
  std::array<std::atomic<std::uint64_t>, k_drop_names.size()> m_dropped{};
  DropLog m_drop_log;
};

} // namespace dbcheck::agent
