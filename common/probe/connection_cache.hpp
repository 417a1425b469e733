#pragma once
// Connections kept open between probe rounds (dbcheck-agent), and the leases checks take them
// through. Kept connections cost the database nothing per poller, and one that is already open
// still works when the server refuses new connections (max_connections reached). They are
// renewed every k_max_age: what only a new session meets (a wedged postmaster that accepts no
// connection, a database or role set read-only, a pg_hba or password change) must reach the
// verdict, and reach it within that bound.

#include "deadline.hpp"
#include "lease_retry.hpp"
#include "pg_session.hpp"
#include "redis_link.hpp"

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
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

// What both leases share: one connection for one check, taken from `cache` when one is kept (a
// null cache: always new), given back at the end if nothing went wrong on it, and replaced once
// when a kept one turns out to have died while idle. `Conn` is PgSession or RedisLink.
template <class Conn>
class Lease {
public:
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  // True when the connection came from the cache (a Redis link is then already authenticated).
  bool reused() const { return m_reused; }

protected:
  // Opens a new connection within a deadline.
  using Connect = std::function<tl::expected<Conn, core::ProbeError>(const Deadline&)>;

  // A lease of a connection under `key`, opened by `connect`; nothing is opened yet.
  Lease(ConnectionCache* cache, std::string key, Connect connect)
      : m_cache(cache), m_key(std::move(key)), m_connect(std::move(connect)) {}

  // Returns a healthy connection to the cache; counts a broken one as closed.
  ~Lease() {
    if (m_cache == nullptr || !m_conn) {
      return;
    }
    if (m_healthy) {
      give_back();
    } else {
      m_cache->count_close(ConnectionCache::Close::broken);
    }
  }

  // Reuses a kept connection, or connects within `deadline`.
  tl::expected<void, core::ProbeError> open_connection(const Deadline& deadline) {
    if (m_cache != nullptr) {
      if (auto kept = take()) {
        m_conn = std::move(kept->conn);
        m_born = kept->born;
        m_reused = true;
        return {};
      }
      m_cache->count_connect();
    }
    auto c = m_connect(deadline);
    if (!c) {
      m_healthy = false;
      return tl::make_unexpected(c.error());
    }
    m_conn = std::move(*c);
    m_born = Clock::now();
    m_reused = false;
    return {};
  }

  // `call(connection)` under lease_retry's rule: a kept connection that fails at once is
  // closed (counted broken), replaced and asked once more. A failure that breaks the
  // connection keeps it from going back to the cache.
  template <class Call>
  auto ask(const Deadline& deadline, Call call) -> decltype(call(std::declval<Conn&>())) {
    if (!m_conn) {
      return tl::make_unexpected(
          core::ProbeError{core::Failure::network, "no connection (open() failed)", ""});
    }
    // Only a kept connection's first request can meet a death while idle: once it has answered
    // on this lease, a failure is the server's now, and a second try on a fresh connection
    // would run a later statement out of its transaction (the write probe's BEGIN ... ROLLBACK).
    auto answer = retry_if_stale(
        m_reused && !m_answered, deadline, [&] { return call(*m_conn); },
        [&] {
          m_conn.reset();
          if (m_cache != nullptr) {
            m_cache->count_close(ConnectionCache::Close::broken);
          }
          return open_connection(deadline);
        });
    // Anything but a network failure came from the server over this connection.
    m_answered = m_answered || answer || answer.error().kind != core::Failure::network;
    if (!answer && breaks_connection(answer.error())) {
      m_healthy = false;
    }
    if constexpr (requires(const Conn& c) { c.usable(); }) {
      // A TLS session that failed fatally, whatever the failure's kind (a refused certificate
      // is auth), cannot be used again.
      if (m_conn && !m_conn->usable()) {
        m_healthy = false;
      }
    }
    return answer;
  }

private:
  std::optional<ConnectionCache::Kept<Conn>> take() {
    if constexpr (std::is_same_v<Conn, PgSession>) {
      return m_cache->take_pg(m_key);
    } else {
      return m_cache->take_redis(m_key);
    }
  }
  void give_back() {
    if constexpr (std::is_same_v<Conn, PgSession>) {
      m_cache->put_pg(m_key, {std::move(*m_conn), m_born});
    } else {
      m_cache->put_redis(m_key, {std::move(*m_conn), m_born});
    }
  }

  ConnectionCache* m_cache;
  std::string m_key;
  Connect m_connect;
  std::optional<Conn> m_conn;
  Clock::time_point m_born{};
  bool m_reused = false;
  bool m_answered = false; // a request on this lease got the server's answer
  bool m_healthy = true;
};

// A PostgreSQL session for one check (see Lease).
class PgLease : public Lease<PgSession> {
public:
  // --- Interface ---

  // A lease of a session to `target`; nothing is opened yet.
  PgLease(ConnectionCache* cache, PgTarget target);

  // Reuses a kept session, or connects within `deadline`.
  tl::expected<void, core::ProbeError> open(const Deadline& deadline) {
    return open_connection(deadline);
  }

  // Runs a query. A kept session that fails at once (the server restarted, an idle timeout
  // cut it) is replaced by a new connection and the query retried once.
  tl::expected<std::vector<PgRow>, core::ProbeError>
  query(const std::string& sql, const std::vector<std::string>& params, const Deadline& deadline);
};

// A Redis/Sentinel link for one check (see Lease).
class RedisLease : public Lease<RedisLink> {
public:
  // --- Interface ---

  // A lease of a link to `address` (over `tls` when enabled); nothing is opened yet. Kept
  // links are told apart by address and TLS settings: a plain link is never handed to a TLS
  // check, nor one verified against another CA or name.
  RedisLease(ConnectionCache* cache, util::HostPort address, config::RedisTls tls);

  // Reuses a kept link, or connects within `deadline`.
  tl::expected<void, core::ProbeError> open(const Deadline& deadline) {
    return open_connection(deadline);
  }

  // Pipelines `commands`; a kept link that fails at once is replaced and the batch retried.
  tl::expected<std::vector<core::RespValue>, core::ProbeError>
  pipeline(const std::vector<RedisCommand>& commands, const Deadline& deadline);
};

} // namespace dbcheck::probe
