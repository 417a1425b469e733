// config/load_config: parse_config on any text. Either every problem is reported as
// "PATH:LINE: KEY: ..." (or "PATH: ..."), or the Config holds the rules the binaries rely on.
#include "fuzz_check.hpp"

#include <config/load_config.hpp>

#include <sys/stat.h>

#include <cstdio>

using dbcheck::fuzz::require;
using namespace dbcheck;
using namespace dbcheck::config;

namespace {

constexpr const char* k_path = "fuzz.toml";

} // namespace

// The seeds name /tmp/dbcheck-fuzz/password as password_file: create it (mode 0600) so valid
// configs get past the password check and on to the cross-section rules.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  ::mkdir("/tmp/dbcheck-fuzz", 0700);
  if (std::FILE* f = std::fopen("/tmp/dbcheck-fuzz/password", "w")) {
    std::fputs("fuzz-secret\n", f);
    std::fclose(f);
  }
  ::chmod("/tmp/dbcheck-fuzz/password", 0600);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const auto cfg = parse_config(dbcheck::fuzz::as_text(data, size), k_path);
  if (!cfg) {
    require(!cfg.error().messages.empty(), "a refusal lists at least one problem");
    for (const std::string& m : cfg.error().messages) {
      require(m.rfind(std::string{k_path} + ":", 0) == 0, "every message names the file");
    }
    return 0;
  }
  require(cfg->path == k_path, "the config remembers its file");
  require(!cfg->backends.empty(), "a valid config has a backend");
  for (const auto& [name, b] : cfg->backends) {
    require(name == b.name, "backends are keyed by name");
    require(cfg->clusters.count(b.cluster) == 1, "a backend's cluster exists");
    require(b.timeout.count() > 0 && b.max_lag.count() > 0, "durations are positive");
  }
  for (const auto& [name, c] : cfg->clusters) {
    require(name_of(c) == name, "clusters are keyed by name");
    if (const auto* r = std::get_if<RedisCluster>(&c)) {
      require(!r->sentinels.empty() && !r->master_name.empty(), "Sentinels and a master name");
      for (const auto& s : r->sentinels) {
        require(s.port != 0, "a Sentinel has a port");
      }
    } else {
      const auto& p = std::get<PostgresCluster>(c);
      require(!p.patroni.empty(), "a PostgreSQL cluster has Patroni URLs");
      // A password file is read, or its cluster alone is unusable and says why (a check of
      // another cluster still runs: Config::unreadable).
      const bool unreadable = cfg->unreadable.count(name) == 1;
      require(p.password_file.has_value() == (!p.password.empty() || unreadable),
              "a password file was read, or its cluster is marked unreadable");
      require(!unreadable || p.password.empty(), "an unreadable cluster has no password");
    }
  }
  for (const auto& [cluster, messages] : cfg->unreadable) {
    require(cfg->clusters.count(cluster) == 1, "an unreadable cluster is defined");
    require(!messages.empty(), "an unreadable cluster says why");
    for (const std::string& m : messages) {
      require(m.rfind(std::string{k_path} + ":", 0) == 0, "every message names the file");
    }
  }
  if (cfg->agent) {
    const AgentSettings& a = *cfg->agent;
    require(a.rise >= 1 && a.fall >= 1, "rise and fall are at least 1");
    require(a.interval.count() > 0, "interval is positive");
    require(a.stale_after >= 2 * a.interval, "stale_after is at least two intervals");
    require(a.max_connections >= 1 && a.max_connections <= 1'000'000, "max_connections bounded");
    for (const auto& [cluster, node] : a.local) {
      require(cfg->clusters.count(cluster) == 1, "[agent.local] names a defined cluster");
      require(node.port != 0, "a local node has a port");
    }
    if (a.default_backend) {
      require(cfg->backends.count(*a.default_backend) == 1, "default_backend exists");
    }
  }
  return 0;
}
