// The real peers behind the checks' seam (peers.hpp): leases from a ConnectionCache, libcurl,
// glibc's resolver, steady_clock.
#include "name_resolver.hpp"
#include "peers.hpp"

#include <util/format.hpp>

#include <climits>

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

namespace dbcheck::probe {
namespace {

class LeasedPg final : public PgPeer {
public:
  LeasedPg(ConnectionCache* cache, PgTarget target) : m_lease(cache, std::move(target)) {}
  tl::expected<void, core::ProbeError> open(const Deadline& deadline) override {
    return m_lease.open(deadline);
  }
  tl::expected<std::vector<PgRow>, core::ProbeError> query(const std::string& sql,
                                                           const Deadline& deadline) override {
    return m_lease.query(sql, {}, deadline);
  }

private:
  PgLease m_lease;
};

class LeasedRedis final : public RedisPeer {
public:
  LeasedRedis(ConnectionCache* cache, util::HostPort address, config::RedisTls tls)
      : m_lease(cache, std::move(address), std::move(tls)) {}
  tl::expected<void, core::ProbeError> open(const Deadline& deadline) override {
    return m_lease.open(deadline);
  }
  tl::expected<std::vector<core::RespValue>, core::ProbeError>
  pipeline(const std::vector<RedisCommand>& commands, const Deadline& deadline) override {
    return m_lease.pipeline(commands, deadline);
  }

private:
  RedisLease m_lease;
};

// statvfs(2) and stat(2) of `path`, following links: the numbers an unprivileged writer
// (PostgreSQL) has left, and the device that tells two paths on one filesystem apart.
tl::expected<core::FsSpace, std::string> measure_fs(const std::string& path) {
  struct statvfs vfs {};
  struct stat st {};
  if (::statvfs(path.c_str(), &vfs) != 0 || ::stat(path.c_str(), &st) != 0) {
    return tl::make_unexpected(std::string{std::strerror(errno)});
  }
  core::FsSpace out;
  char resolved[PATH_MAX];
  out.resolved = ::realpath(path.c_str(), resolved) != nullptr ? resolved : path;
  out.device = static_cast<std::uint64_t>(st.st_dev);
  const auto unit = static_cast<std::uint64_t>(vfs.f_frsize);
  out.free_bytes = static_cast<std::uint64_t>(vfs.f_bavail) * unit;
  out.total_bytes = static_cast<std::uint64_t>(vfs.f_blocks) * unit;
  out.free_inodes = static_cast<std::uint64_t>(vfs.f_favail);
  out.total_inodes = static_cast<std::uint64_t>(vfs.f_files);
  return out;
}

// measure_fs(), at most one call per path at a time: statvfs on a hung filesystem (a hard NFS
// mount) never returns and cannot be interrupted, so each later round would leave one more
// thread stuck in it until none could be made; while one is stuck, the path is reported as
// not answering instead.
tl::expected<core::FsSpace, std::string> measure_fs_once(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, Clock::time_point> asking;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = asking.find(path); it != asking.end()) {
      const auto waited = std::chrono::duration<double>(Clock::now() - it->second).count();
      return tl::make_unexpected(
          util::format("statvfs has not returned for {:.0f} s (a hung filesystem?)", waited));
    }
    asking.emplace(path, Clock::now());
  }
  auto measured = measure_fs(path);
  const std::lock_guard<std::mutex> lock(mutex);
  asking.erase(path);
  return measured;
}

class NetworkPeers final : public Peers {
public:
  explicit NetworkPeers(std::shared_ptr<ConnectionCache> cache) : m_cache(std::move(cache)) {}
  std::unique_ptr<PgPeer> pg(const PgTarget& target) override {
    return std::make_unique<LeasedPg>(m_cache.get(), target);
  }
  std::unique_ptr<RedisPeer> redis(const util::HostPort& address,
                                   const config::RedisTls& tls) override {
    return std::make_unique<LeasedRedis>(m_cache.get(), address, tls);
  }
  std::vector<HttpReply> get_all(const std::vector<std::string>& urls, const HttpOptions& options,
                                 const Deadline& deadline, const EnoughFn& enough) override {
    return probe::get_all(urls, options, deadline, enough);
  }
  HttpReply post(const std::string& url, const std::string& json_body,
                 const std::optional<HttpCredentials>& credentials, const HttpOptions& options,
                 const Deadline& deadline) override {
    return post_json(url, json_body, credentials, options, deadline);
  }
  std::vector<core::NameAnswer> resolve(const std::vector<std::string>& names,
                                        const Deadline& deadline) override {
    return resolve_names(names, deadline);
  }
  tl::expected<core::FsSpace, std::string> fs_space(const std::string& path) override {
    return measure_fs_once(path);
  }
  Clock::time_point now() override { return Clock::now(); }
  void sleep_for(Clock::duration d) override { std::this_thread::sleep_for(d); }
  std::optional<SharedView> shared_view(const ShareSettings& settings,
                                        const std::string& key) override {
    if (m_cache || settings.max_age.count() <= 0) {
      return std::nullopt;
    }
    return read_shared_view(shared_view_dir(settings), key, settings.max_age);
  }
  std::optional<std::chrono::nanoseconds> mark_check(const ShareSettings& settings,
                                                     const std::string& key) override {
    if (m_cache) {
      return std::nullopt;
    }
    return probe::mark_check(shared_view_dir(settings), key);
  }
  void share_view(const ShareSettings& settings, const std::string& key,
                  const SharedView& view) override {
    if (!m_cache && settings.max_age.count() > 0) {
      write_shared_view(shared_view_dir(settings), key, view);
    }
  }

private:
  // Held here so every thread holding the peers holds the cache: an abandoned step may give
  // its connection back after the check returned.
  std::shared_ptr<ConnectionCache> m_cache;
};

} // namespace

std::shared_ptr<Peers> network_peers(std::shared_ptr<ConnectionCache> cache) {
  return std::make_shared<NetworkPeers>(std::move(cache));
}

} // namespace dbcheck::probe
