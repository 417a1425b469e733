#pragma once
// The seam between the checks (and the switchover) and the network: the few things they may
// ask a peer, and the clock they read. network_peers() is the real one (leases through a
// ConnectionCache, libcurl, steady_clock); unit tests script fakes (tests/unit/test_probe_*), so
// the checks' own rules (catch-up, deadline reserves, the order of the lag bound) are tested
// without servers.

#include "connection_cache.hpp"
#include "deadline.hpp"
#include "http_client.hpp"
#include "pg_session.hpp"
#include "redis_link.hpp"
#include "shared_views.hpp"

#include <core/disk_space.hpp>
#include <core/endpoint_names.hpp>
#include <core/probe_error.hpp>
#include <core/resp.hpp>

#include <tl/expected.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dbcheck::probe {

// Where a check stands: on another host (dbcheck, beside HAProxy) or on the node itself (the
// agent, [agent.local]), where it may also read the node's filesystems.
enum class Vantage { remote, on_node };

// One PostgreSQL node as a check sees it: open once, then parameterless statements.
class PgPeer {
public:
  virtual ~PgPeer() = default;
  // Opens (or reuses) a session within `deadline`.
  virtual tl::expected<void, core::ProbeError> open(const Deadline& deadline) = 0;
  // Runs one statement and returns its rows, or the classified error.
  virtual tl::expected<std::vector<PgRow>, core::ProbeError> query(const std::string& sql,
                                                                   const Deadline& deadline) = 0;
};

// One Redis node or Sentinel as a check sees it: open once, then pipelined commands.
class RedisPeer {
public:
  virtual ~RedisPeer() = default;
  // Opens (or reuses) a link within `deadline`.
  virtual tl::expected<void, core::ProbeError> open(const Deadline& deadline) = 0;
  // One reply per command, in order; error replies are replies, not failures.
  virtual tl::expected<std::vector<core::RespValue>, core::ProbeError>
  pipeline(const std::vector<RedisCommand>& commands, const Deadline& deadline) = 0;
};

// Everything a check reaches beyond itself. Shared by the threads of one check (an abandoned
// one may still hold it after the check returned): implementations must be thread-safe.
class Peers {
public:
  virtual ~Peers() = default;
  // A PostgreSQL node; nothing is opened yet.
  virtual std::unique_ptr<PgPeer> pg(const PgTarget& target) = 0;
  // A Redis node or Sentinel, reached over `tls` when enabled; nothing is opened yet.
  virtual std::unique_ptr<RedisPeer> redis(const util::HostPort& address,
                                           const config::RedisTls& tls) = 0;
  // GETs every URL at once, as probe::get_all() does (http_client.hpp).
  virtual std::vector<HttpReply> get_all(const std::vector<std::string>& urls,
                                         const HttpOptions& options, const Deadline& deadline,
                                         const EnoughFn& enough) = 0;
  // POSTs `json_body` to `url`, as probe::post_json() does (http_client.hpp): the one request
  // that changes a cluster (the switchover's POST /switchover to Patroni).
  virtual HttpReply post(const std::string& url, const std::string& json_body,
                         const std::optional<HttpCredentials>& credentials,
                         const HttpOptions& options, const Deadline& deadline) = 0;
  // Resolves host names, one answer per name, by `deadline` (name_resolver.hpp).
  virtual std::vector<core::NameAnswer> resolve(const std::vector<std::string>& names,
                                                const Deadline& deadline) = 0;
  // statvfs(2) of the filesystem holding `path` (symbolic links followed), or the OS's reason
  // ("Permission denied"). Local: only a check running on the node asks (disk_space.hpp).
  virtual tl::expected<core::FsSpace, std::string> fs_space(const std::string& path) = 0;
  // The time now, on the clock the checks' own waits are measured with.
  virtual Clock::time_point now() = 0;
  // Waits `d` (the catch-up poll's pause).
  virtual void sleep_for(Clock::duration d) = 0;
  // The Patroni view another check of this host shared as `key`, when fresh by `settings`
  // (shared_views.hpp). None by default: only the external check shares views.
  virtual std::optional<SharedView> shared_view(const ShareSettings& settings,
                                                const std::string& key) {
    (void)settings;
    (void)key;
    return std::nullopt;
  }
  // Marks a check kept as `key` as starting now and returns the time since the mark before
  // (shared_views.hpp, mark_check). Nothing by default.
  virtual std::optional<std::chrono::nanoseconds> mark_check(const ShareSettings& settings,
                                                             const std::string& key) {
    (void)settings;
    (void)key;
    return std::nullopt;
  }
  // Shares `view` as `key` with the checks that follow (shared_views.hpp). Nothing by default.
  virtual void share_view(const ShareSettings& settings, const std::string& key,
                          const SharedView& view) {
    (void)settings;
    (void)key;
    (void)view;
  }
};

// --- Interface ---

// The real peers: sessions and links leased from `cache` (null: opened and closed per check),
// HTTP through libcurl, steady_clock. Without a cache (the external check, one process per
// check) Patroni views are shared through files (shared_views.hpp); the agent, which keeps
// its connections in a cache, asks once per round for all its pollers and shares nothing.
std::shared_ptr<Peers> network_peers(std::shared_ptr<ConnectionCache> cache);

} // namespace dbcheck::probe
