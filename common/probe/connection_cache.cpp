#include "connection_cache.hpp"

#include "lease_retry.hpp"

namespace dbcheck::probe {

template <class Conn>
void ConnectionCache::keep(std::multimap<std::string, Idle<Conn>>& pool, const std::string& key,
                           Kept<Conn> c) {
  const auto now = Clock::now();
  for (auto it = pool.begin(); it != pool.end();) {
    if (now - it->second.since > k_idle_limit) {
      count_close(Close::idle);
      it = pool.erase(it);
    } else {
      it = std::next(it);
    }
  }
  if (too_old(c.born, now)) {
    count_close(Close::max_age);
  } else if (pool.count(key) != 0) {
    count_close(Close::surplus); // one idle connection per peer is enough; this one closes here
  } else {
    pool.emplace(key, Idle<Conn>{now, std::move(c)});
  }
}

template <class Conn>
std::optional<ConnectionCache::Kept<Conn>>
ConnectionCache::take(std::multimap<std::string, Idle<Conn>>& pool, const std::string& key) {
  const auto it = pool.find(key);
  if (it == pool.end()) {
    return std::nullopt;
  }
  Kept<Conn> kept = std::move(it->second.kept);
  pool.erase(it);
  if (too_old(kept.born, Clock::now())) {
    count_close(Close::max_age);
    return std::nullopt; // closes here: the next check opens a new one
  }
  return kept;
}

std::map<std::string, std::uint64_t> ConnectionCache::closes() const {
  return {{"max_age", m_closes[static_cast<std::size_t>(Close::max_age)].load()},
          {"idle", m_closes[static_cast<std::size_t>(Close::idle)].load()},
          {"broken", m_closes[static_cast<std::size_t>(Close::broken)].load()},
          {"surplus", m_closes[static_cast<std::size_t>(Close::surplus)].load()}};
}

std::optional<ConnectionCache::Kept<PgSession>> ConnectionCache::take_pg(const std::string& key) {
  std::lock_guard lock(m_mutex);
  return take(m_pg, key);
}

void ConnectionCache::put_pg(const std::string& key, Kept<PgSession> s) {
  std::lock_guard lock(m_mutex);
  keep(m_pg, key, std::move(s));
}

std::optional<ConnectionCache::Kept<RedisLink>>
ConnectionCache::take_redis(const std::string& key) {
  std::lock_guard lock(m_mutex);
  return take(m_redis, key);
}

void ConnectionCache::put_redis(const std::string& key, Kept<RedisLink> l) {
  std::lock_guard lock(m_mutex);
  keep(m_redis, key, std::move(l));
}

// ---------------------------------------------------------------- PostgreSQL

PgLease::PgLease(ConnectionCache* cache, PgTarget target)
    : m_cache(cache), m_target(std::move(target)),
      m_key(util::to_string(m_target.address) + "/" + m_target.dbname + "/" + m_target.user) {}

PgLease::~PgLease() {
  if (m_cache != nullptr && m_session) {
    if (m_healthy) {
      m_cache->put_pg(m_key, {std::move(*m_session), m_born});
    } else {
      m_cache->count_close(ConnectionCache::Close::broken);
    }
  }
}

tl::expected<void, core::ProbeError> PgLease::open(const Deadline& deadline) {
  if (m_cache != nullptr) {
    if (auto kept = m_cache->take_pg(m_key)) {
      m_session = std::move(kept->conn);
      m_born = kept->born;
      m_reused = true;
      return {};
    }
    m_cache->count_connect();
  }
  auto s = PgSession::connect(m_target, deadline);
  if (!s) {
    m_healthy = false;
    return tl::make_unexpected(s.error());
  }
  m_session = std::move(*s);
  m_born = Clock::now();
  m_reused = false;
  return {};
}

tl::expected<std::vector<PgRow>, core::ProbeError>
PgLease::query(const std::string& sql, const std::vector<std::string>& params,
               const Deadline& deadline) {
  if (!m_session) {
    return tl::make_unexpected(
        core::ProbeError{core::Failure::network, "no connection (open() failed)", ""});
  }
  auto rows = retry_if_stale(
      m_reused, deadline, [&] { return m_session->query(sql, params, deadline); },
      [&] {
        m_session.reset();
        if (m_cache != nullptr) {
          m_cache->count_close(ConnectionCache::Close::broken);
        }
        return open(deadline);
      });
  if (!rows && breaks_connection(rows.error())) {
    m_healthy = false;
  }
  return rows;
}

// ---------------------------------------------------------------- Redis

RedisLease::RedisLease(ConnectionCache* cache, util::HostPort address)
    : m_cache(cache), m_address(std::move(address)), m_key(util::to_string(m_address)) {}

RedisLease::~RedisLease() {
  if (m_cache != nullptr && m_link) {
    if (m_healthy) {
      m_cache->put_redis(m_key, {std::move(*m_link), m_born});
    } else {
      m_cache->count_close(ConnectionCache::Close::broken);
    }
  }
}

tl::expected<void, core::ProbeError> RedisLease::open(const Deadline& deadline) {
  if (m_cache != nullptr) {
    if (auto kept = m_cache->take_redis(m_key)) {
      m_link = std::move(kept->conn);
      m_born = kept->born;
      m_reused = true;
      return {};
    }
    m_cache->count_connect();
  }
  auto l = RedisLink::connect(m_address, deadline);
  if (!l) {
    m_healthy = false;
    return tl::make_unexpected(l.error());
  }
  m_link = std::move(*l);
  m_born = Clock::now();
  m_reused = false;
  return {};
}

tl::expected<std::vector<core::RespValue>, core::ProbeError>
RedisLease::pipeline(const std::vector<RedisCommand>& commands, const Deadline& deadline) {
  if (!m_link) {
    return tl::make_unexpected(
        core::ProbeError{core::Failure::network, "no connection (open() failed)", ""});
  }
  auto replies = retry_if_stale(
      m_reused, deadline, [&] { return m_link->pipeline(commands, deadline); },
      [&] {
        m_link.reset();
        if (m_cache != nullptr) {
          m_cache->count_close(ConnectionCache::Close::broken);
        }
        return open(deadline);
      });
  if (!replies && breaks_connection(replies.error())) {
    m_healthy = false;
  }
  return replies;
}

} // namespace dbcheck::probe
