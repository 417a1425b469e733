#pragma once
// dbcheck's configuration after validation: plain values, every default filled in.

#include <core/pg_verdict.hpp>
#include <util/duration.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dbcheck::config {

// A password held in memory only; it has no formatter on purpose, so it cannot leak into logs.
class Secret {
public:
  Secret() = default;
  explicit Secret(std::string value) : m_value(std::move(value)) {}
  // The secret itself, for handing to a client library only.
  const std::string& reveal() const { return m_value; }
  bool empty() const { return m_value.empty(); }

private:
  std::string m_value;
};

enum class Engine { postgres };
enum class Role { primary, replica };

struct Cluster {
  std::string name;
  Engine engine = Engine::postgres;
  std::vector<std::string> patroni; // REST base URLs, asked in parallel
  std::string dbname;
  std::string user;
  std::optional<std::string> password_file;
  Secret password; // read from password_file at load time
  std::string sslmode = "prefer";
  std::optional<std::string> sslrootcert;
  std::optional<std::string> patroni_cafile; // CA bundle for https Patroni URLs
};

struct Backend {
  std::string name; // HAProxy's backend name (HAPROXY_PROXY_NAME)
  std::string cluster;
  Role role = Role::primary;
  util::Duration timeout{800};  // deadline for one whole check
  util::Duration max_lag{1000}; // replicas: the most staleness allowed
  core::SaturationPolicy on_saturation = core::SaturationPolicy::up;
};

struct Config {
  std::string path;
  std::map<std::string, Cluster> clusters;
  std::map<std::string, Backend> backends;
};

// --- Interface ---

// "primary" / "replica".
std::string_view to_string(Role role);

} // namespace dbcheck::config
