#pragma once
// dbcheck's configuration after validation: plain values, every default filled in.

#include "secret.hpp"

#include <core/disk_space.hpp>
#include <core/pass_log.hpp>
#include <core/patroni_cluster.hpp>
#include <core/writer_opinions.hpp>
#include <util/cidr.hpp>
#include <util/duration.hpp>
#include <util/host_port.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace dbcheck::config {

// Which traffic a backend carries: writes (the one primary) or reads (replicas).
enum class Role { primary, replica };

// The longest shared_view_max_age: a check must not keep naming a writer the members may no
// longer name for longer.
inline constexpr util::Duration k_max_shared_view_max_age{2000};

// A Patroni-managed PostgreSQL cluster ([cluster.NAME] with engine = "postgres").
struct PostgresCluster {
  std::string name;
  std::vector<std::string> patroni; // REST base URLs, asked in parallel
  std::string dbname;
  std::string user;
  std::optional<std::string> password_file;
  Secret password; // read from password_file at load time
  std::string sslmode = "prefer";
  std::optional<std::string> sslrootcert;
  // A client certificate and its key (both or neither), for pg_hba's `cert` method. Paths:
  // libpq reads them itself; load_config has checked the key as strictly as a password file.
  std::optional<std::string> sslcert;
  std::optional<std::string> sslkey;
  bool require_tls = false; // sslmode below verify-full, or an http:// Patroni URL: an error
  std::optional<std::string> patroni_cafile;   // CA bundle for https Patroni URLs
  std::optional<std::string> patroni_certfile; // client certificate for https (verify_client)
  std::optional<std::string> patroni_keyfile;  // its private key
  // The agent only (it runs on the node): the data directory, whose filesystem and pg_wal's
  // must keep disk's floors free (core/disk_space.hpp). None: free space is not measured.
  std::optional<std::string> data_directory;
  core::DiskPolicy disk; // min_free_space, min_free_inodes
  // Writer checks also extend a table and roll back (probe/write_probe.hpp): a full disk.
  bool write_probe = false;
  // External checks of this host share the members' view for this long (0: never; at most 2 s),
  // in this directory (none: /tmp/dbcheck-shared-<euid>): probe/shared_views.hpp. None ("auto",
  // the default): half the time between a server's own checks (core/shared_view.hpp), so at any
  // inter a round of checks shares one view: every check asking a majority of the members costs
  // Patroni more REST requests than its own httpchk, and a shared view can take a writer down,
  // never keep one up.
  std::optional<util::Duration> shared_view_max_age;
  int shared_view_max_age_line = 0; // where it is written (0: not), for config-check
  std::optional<std::string> shared_view_dir;
  // `dbcheck switchover` only: Patroni REST basic-auth user and the path of its password file
  // (read when a switchover runs, never by checks: the check user cannot read it).
  std::optional<std::string> operator_user;
  std::optional<std::string> operator_password_file;
  // A standby cluster's source_cluster: the [cluster.NAME] its standby_leader replicates from,
  // whose leader its readers' lag is measured against (docs/lag.md). None: the commit age only.
  std::optional<std::string> source_cluster;
  int source_cluster_line = 0; // where it is written, for the errors of the link
  // That cluster's settings, linked once the whole file is read (load_config.cpp); null: none.
  std::shared_ptr<const PostgresCluster> source;
  // Why the source cannot be reached though linked (its password file is unreadable); empty: it
  // can. Its readers then keep the commit-age bound and say why, rather than fail.
  std::string source_unusable;
};

// TLS on the links to a Redis cluster's data nodes (tls = true) or to its Sentinels
// (sentinel_tls = true); the files were checked at load, the probe opens them on each connect.
struct RedisTls {
  bool enabled = false;
  std::optional<std::string> ca_cert_file; // none: the system's CA store
  std::optional<std::string> cert_file;    // a client certificate (tls-auth-clients), with key_file
  std::optional<std::string> key_file;
  std::optional<std::string> server_name; // the name the certificate must carry; none: the address
};

// Redis/Valkey data nodes watched by Sentinels ([cluster.NAME] with engine = "redis").
struct RedisCluster {
  std::string name;
  std::vector<util::HostPort> sentinels; // every configured Sentinel: the majority counts these
  std::string master_name;
  std::optional<std::string> user; // ACL user on the data nodes; none: AUTH with the password only
  Secret password;
  std::optional<std::string> sentinel_user;
  Secret sentinel_password;
  RedisTls tls;             // the data nodes
  RedisTls sentinel_tls;    // the Sentinels
  bool require_tls = false; // a plain-text link to a data node or a Sentinel: an error at load
  // Writer checks also send a write that changes nothing (LPUSHX on an absent key), so a master
  // that refuses writes (MISCONF, OOM, NOREPLICAS) is not passed as a writer.
  bool write_probe = true;
  // `dbcheck switchover` only: the ACL user with pause and failover rights on the data nodes
  // and Sentinels, and the path of its password file (read only when a switchover runs).
  std::optional<std::string> operator_user;
  std::optional<std::string> operator_password_file;
};

// A [cluster.NAME] of either engine.
using Cluster = std::variant<PostgresCluster, RedisCluster>;

// A visitor made of one lambda per engine: std::visit(Overloaded{[](const PostgresCluster&)
// {...}, [](const RedisCluster&) {...}}, cluster). Every site that acts on the engine
// dispatches this way, with a lambda per alternative and none taking `auto`, so an engine
// added to Cluster fails to compile wherever it is not handled (docs/architecture.md).
template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

// One HAProxy backend ([backend.NAME]): the cluster it routes to, and how to judge its nodes.
struct Backend {
  std::string name; // HAProxy's backend name (HAPROXY_PROXY_NAME)
  std::string cluster;
  Role role = Role::primary;
  util::Duration timeout{800};  // deadline for one whole check
  util::Duration max_lag{1000}; // replicas: the most staleness allowed
  // The node's own answer time beyond which it is slow (below timeout); unset: no bound.
  std::optional<util::Duration> max_latency;
  core::SaturationPolicy on_saturation = core::SaturationPolicy::up;
  core::ReaderChoice readers = core::ReaderChoice::any; // PostgreSQL replicas: which ones read
  // Where config-check's comparison with haproxy.cfg points: the [backend.NAME] header, and the
  // `timeout` that applies (the backend's own or [defaults]'; 0: the built-in default).
  int line = 0;
  int timeout_line = 0;
};

// The [agent] section: how dbcheck-agent listens, probes and damps (ignored by dbcheck).
struct AgentSettings {
  // Both ports must be stated (no wildcard default): the agent's answers can take a host's
  // servers down, so where it listens is the operator's explicit choice.
  util::HostPort listen;                    // agent-check port
  util::HostPort http_listen;               // HTTP endpoints and /metrics
  std::vector<util::Cidr> allow;            // clients admitted on both ports (required)
  bool expose_reasons = true;               // reasons and /health detail for allowed clients
  std::optional<std::string> http_certfile; // with http_keyfile: serve HTTPS instead
  std::optional<std::string> http_keyfile;
  util::Duration interval{1000};         // one probe round per cluster per interval
  util::Duration fastinter{250};         // rounds this often while failing towards down
  int fall = 2;                          // consecutive failures to go down
  int rise = 3;                          // consecutive successes to come back
  util::Duration lag_window{5000};       // max_lag exceeded this long before a replica leaves
  util::Duration stale_after{3000};      // a verdict older than this is not trusted
  util::Duration shutdown_grace{10000};  // answer "drain" this long after SIGTERM
  util::Duration ready_window{10000};    // send "ready" this long after our own drain ends
  std::optional<std::string> drain_file; // while it exists, every backend answers drain
  std::string state_dir = "/var/lib/dbcheck-agent"; // our own drain, across restarts
  std::optional<std::string> default_backend;       // for pollers that send no agent-send line
  std::size_t max_connections = 20000;              // agent port: open connections at most
  std::map<std::string, util::HostPort> local;      // [agent.local]: cluster -> this host's node
};

// The [log] section: which checks of dbcheck write a syslog line (ignored by dbcheck-agent).
// Failures are always logged; a pass by default only when it differs from the server's last
// line, or that line is pass_heartbeat old (external-check/last_logged.hpp keeps it).
struct LogSettings {
  core::PassLogging passes = core::PassLogging::changes;
  util::Duration pass_heartbeat{3'600'000};
  std::optional<std::string> state_dir; // none: /tmp/dbcheck-log-<euid>
};

// The whole validated file.
struct Config {
  std::string path;
  std::map<std::string, Cluster> clusters; // by name, each a PostgresCluster or a RedisCluster
  std::map<std::string, Backend> backends;
  std::optional<AgentSettings> agent; // present when the file has an [agent] section
  LogSettings log;
  // Clusters whose password files could not be read, each with its "FILE:LINE: KEY: why"
  // messages. Only that cluster is unusable: a check of another one still runs (one bad file
  // must not take every backend of the host down); config-check and the agent refuse them all.
  std::map<std::string, std::vector<std::string>> unreadable;
  // "FILE:LINE: key: why" for settings that work but leave a writer's opinions open to a man in
  // the middle; said by config-check and in the agent's start log, not by each check.
  std::vector<std::string> warnings;
};

// --- Interface ---

// "primary" / "replica".
std::string_view to_string(Role role);

// The [cluster.NAME] name of either kind of cluster.
const std::string& name_of(const Cluster& cluster);

} // namespace dbcheck::config
