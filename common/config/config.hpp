#pragma once
// dbcheck's configuration after validation: plain values, every default filled in.

#include "secret.hpp"

#include <core/pg_verdict.hpp>
#include <util/duration.hpp>
#include <util/host_port.hpp>

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace dbcheck::config {

// Which traffic a backend carries: writes (the one primary) or reads (replicas).
enum class Role { primary, replica };

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
  std::optional<std::string> patroni_cafile; // CA bundle for https Patroni URLs
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
};

// A [cluster.NAME] of either engine.
using Cluster = std::variant<PostgresCluster, RedisCluster>;

// One HAProxy backend ([backend.NAME]): the cluster it routes to, and how to judge its nodes.
struct Backend {
  std::string name; // HAProxy's backend name (HAPROXY_PROXY_NAME)
  std::string cluster;
  Role role = Role::primary;
  util::Duration timeout{800};  // deadline for one whole check
  util::Duration max_lag{1000}; // replicas: the most staleness allowed
  core::SaturationPolicy on_saturation = core::SaturationPolicy::up;
};

// The whole validated file.
struct Config {
  std::string path;
  std::map<std::string, Cluster> clusters; // by name, each a PostgresCluster or a RedisCluster
  std::map<std::string, Backend> backends;
};

// --- Interface ---

// "primary" / "replica".
std::string_view to_string(Role role);

// The [cluster.NAME] name of either kind of cluster.
const std::string& name_of(const Cluster& cluster);

} // namespace dbcheck::config
