#pragma once
// Connections kept open between probe rounds (dbcheck-agent), and the leases checks take them
// through. Kept connections cost the database nothing per poller, and one that is already open
// still works when the server refuses new connections (max_connections reached). They are
// renewed every k_max_age: what only a new session meets (a wedged postmaster that accepts no
// connection, a database or role set read-only, a pg_hba or password change) must reach the
// verdict, and reach it within that bound.

#include "deadline.hpp"
#include "pg_session.hpp"
#include "redis_link.hpp"

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dbcheck::probe {

// Idle connections by address, for one prober. Thread-safe; a connection is used by one check
// at a time (taken out while in use).
class ConnectionCache {
public:
  // --- Interface ---

  // A kept connection and when it was opened.
  template <class Conn>
  struct Kept {
    Conn conn;
    Clock::time_point born;
  };

  // An idle PostgreSQL session to `key` younger than k_max_age, or nullopt.
  std::optional<Kept<PgSession>> take_pg(const std::string& key);
  // Keeps `s` (opened at `born`) for the next round.
  void put_pg(const std::string& key, Kept<PgSession> s);
  // An idle Redis link to `key` younger than k_max_age, or nullopt.
  std::optional<Kept<RedisLink>> take_redis(const std::string& key);
  // Keeps `l` (opened at `born`) for the next round.
  void put_redis(const std::string& key, Kept<RedisLink> l);

  // True when a connection opened at `born` is too old to be used at `now`.
  static bool too_old(Clock::time_point born, Clock::time_point now) {
    return now - born >= k_max_age;
  }

  // Why a kept connection was closed.
  enum class Close { max_age, idle, broken, surplus };

  // New connections opened through this cache (first ones and reconnects), for /metrics.
  std::uint64_t connects() const { return m_connects.load(); }
  // Counts one new connection (called by the leases).
  void count_connect() { ++m_connects; }
  // Kept connections closed so far, by reason ("max_age", "idle", "broken", "surplus"), for
  // /metrics. Counted, not logged: a renewal every k_max_age is routine.
  std::map<std::string, std::uint64_t> closes() const;
  // Counts one closed connection (a lease that found its connection broken).
  void count_close(Close why) { ++m_closes[static_cast<std::size_t>(why)]; }

  // A connection not taken again within this long is closed (an old leader's, after a
  // switchover; one an abandoned step gave back late).
  static constexpr auto k_idle_limit = std::chrono::seconds{30};
  // A connection this old is closed instead of reused (see the top of this file).
  static constexpr auto k_max_age = std::chrono::seconds{5};

private:
  template <class Conn>
  struct Idle {
    Clock::time_point since;
    Kept<Conn> kept;
  };
  // Keeps at most one idle connection per key and drops those idle too long.
  template <class Conn>
  void keep(std::multimap<std::string, Idle<Conn>>& pool, const std::string& key, Kept<Conn> c);
  // The idle connection to `key`, unless none is kept or it is too old (then closed).
  template <class Conn>
  std::optional<Kept<Conn>> take(std::multimap<std::string, Idle<Conn>>& pool,
                                 const std::string& key);

  std::mutex m_mutex;
  std::multimap<std::string, Idle<PgSession>> m_pg;
  std::multimap<std::string, Idle<RedisLink>> m_redis;
  std::atomic<std::uint64_t> m_connects{0};
  std::array<std::atomic<std::uint64_t>, 4> m_closes{}; // by Close
};

// A PostgreSQL session for one check: reused from `cache` when one is kept (a null cache:
// always new), given back at the end of the check if nothing went wrong on it.
class PgLease {
public:
  // --- Interface ---

  // A lease of a session to `target`; nothing is opened yet.
  PgLease(ConnectionCache* cache, PgTarget target);
  PgLease(const PgLease&) = delete;
  PgLease& operator=(const PgLease&) = delete;
  // Returns a healthy session to the cache.
  ~PgLease();

  // Reuses a kept session, or connects within `deadline`.
  tl::expected<void, core::ProbeError> open(const Deadline& deadline);

  // Runs a query. A kept session that fails at once (the server restarted, an idle timeout
  // cut it) is replaced by a new connection and the query retried once.
  tl::expected<std::vector<PgRow>, core::ProbeError>
  query(const std::string& sql, const std::vector<std::string>& params, const Deadline& deadline);

private:
  ConnectionCache* m_cache;
  PgTarget m_target;
  std::string m_key;
  std::optional<PgSession> m_session;
  Clock::time_point m_born{};
  bool m_reused = false;
  bool m_healthy = true;
};

// The same for Redis/Sentinel links.
class RedisLease {
public:
  // --- Interface ---

  // A lease of a link to `address`; nothing is opened yet.
  RedisLease(ConnectionCache* cache, util::HostPort address);
  RedisLease(const RedisLease&) = delete;
  RedisLease& operator=(const RedisLease&) = delete;
  // Returns a healthy link to the cache.
  ~RedisLease();

  // Reuses a kept link, or connects within `deadline`.
  tl::expected<void, core::ProbeError> open(const Deadline& deadline);

  // Pipelines `commands`; a kept link that fails at once is replaced and the batch retried.
  tl::expected<std::vector<core::RespValue>, core::ProbeError>
  pipeline(const std::vector<RedisCommand>& commands, const Deadline& deadline);

  // True when the link came from the cache (it is already authenticated).
  bool reused() const { return m_reused; }

private:
  ConnectionCache* m_cache;
  util::HostPort m_address;
  std::string m_key;
  std::optional<RedisLink> m_link;
  Clock::time_point m_born{};
  bool m_reused = false;
  bool m_healthy = true;
};

} // namespace dbcheck::probe
