#include "connection_cache.hpp"

#include <util/format.hpp>

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

// ---------------------------------------------------------------- the two leases

PgLease::PgLease(ConnectionCache* cache, PgTarget target)
    : Lease(cache, util::to_string(target.address) + "/" + target.dbname + "/" + target.user,
            [target](const Deadline& d) { return PgSession::connect(target, d); }) {}

tl::expected<std::vector<PgRow>, core::ProbeError>
PgLease::query(const std::string& sql, const std::vector<std::string>& params,
               const Deadline& deadline) {
  return ask(deadline, [&](PgSession& s) { return s.query(sql, params, deadline); });
}

namespace {

// The cache key of a link: a plain/TLS tag first, then every field length-prefixed, so no
// two (address, TLS identity) pairs can spell the same key, whatever a Sentinel hands out.
std::string link_key(const util::HostPort& address, const config::RedisTls& tls) {
  std::string key = tls.enabled ? "tls" : "plain";
  const auto field = [&key](const std::string& f) { key += util::format("|{}:{}", f.size(), f); };
  field(util::to_string(address));
  if (tls.enabled) {
    for (const auto& f : {tls.ca_cert_file, tls.cert_file, tls.key_file, tls.server_name}) {
      field(f ? "=" + *f : "-");
    }
  }
  return key;
}

} // namespace

RedisLease::RedisLease(ConnectionCache* cache, util::HostPort address, config::RedisTls tls)
    : Lease(cache, link_key(address, tls),
            [address, tls](const Deadline& d) { return RedisLink::connect(address, d, &tls); }) {}

tl::expected<std::vector<core::RespValue>, core::ProbeError>
RedisLease::pipeline(const std::vector<RedisCommand>& commands, const Deadline& deadline) {
  return ask(deadline, [&](RedisLink& l) { return l.pipeline(commands, deadline); });
}

} // namespace dbcheck::probe
