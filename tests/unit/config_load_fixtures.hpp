#pragma once
// The file the loader's tests (test_config_load_config_*.cpp) start from, and their errors as one
// text. A namespace of its own: other config tests name an errors_of() too.

#include <config/load_config.hpp>

#include <tl/expected.hpp>

#include <string>

namespace dbcheck::testing::config_load {

// A valid file: cluster pg (password in `password_file`), pg_write, pg_read; tests cite its lines.
inline std::string valid_config(const std::string& password_file) {
  return R"([defaults]
timeout = "800ms"

[cluster.pg]
engine = "postgres"
patroni = ["http://10.0.0.1:8008", "http://10.0.0.2:8008/"]
dbname = "app"
user = "healthcheck"
password_file = ")" +
         password_file + R"("

[backend.pg_write]
cluster = "pg"
role = "primary"

[backend.pg_read]
cluster = "pg"
role = "replica"
max_lag = "1.5s"
)";
}

// Every message of the failed result `r`, each on a line of its own.
inline std::string errors_of(const tl::expected<config::Config, config::ConfigError>& r) {
  std::string out;
  for (const auto& m : r.error().messages) {
    out += m + "\n";
  }
  return out;
}

} // namespace dbcheck::testing::config_load
