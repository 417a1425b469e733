#include "source_cluster.hpp"

#include <util/format.hpp>

namespace dbcheck::config {
namespace {

// Where source_cluster is written in [cluster.`name`], for Errors::add.
toml::source_region at_line(int line) {
  toml::source_region where;
  where.begin.line = static_cast<toml::source_index>(line);
  return where;
}

} // namespace

void check_source_clusters(const Config& cfg, Errors& e) {
  for (const auto& [name, cluster] : cfg.clusters) {
    const auto* standby = std::get_if<PostgresCluster>(&cluster);
    if (standby == nullptr || !standby->source_cluster) {
      continue;
    }
    const std::string& wanted = *standby->source_cluster;
    const toml::source_region where = at_line(standby->source_cluster_line);
    const std::string key = util::format("cluster.{}.source_cluster", name);
    const auto it = cfg.clusters.find(wanted);
    if (wanted == name) {
      e.add(where, key, "names its own section: a standby cluster replicates from another cluster");
    } else if (it == cfg.clusters.end()) {
      e.add(where, key, util::format("no [cluster.{}] is defined", wanted));
    } else if (const auto* source = std::get_if<PostgresCluster>(&it->second); source == nullptr) {
      e.add(where, key,
            util::format("[cluster.{}] is not a PostgreSQL cluster: a standby cluster replicates "
                         "from a PostgreSQL cluster under Patroni",
                         wanted));
    } else if (source->source_cluster) {
      e.add(where, key,
            util::format("[cluster.{}] is itself a standby cluster (source_cluster = \"{}\"): "
                         "its standby_leader's WAL position cannot be sampled (it is in "
                         "recovery); name the cluster at the head of the chain, whose leader "
                         "writes",
                         wanted, *source->source_cluster));
    }
  }
}

void link_source_clusters(Config& cfg) {
  for (auto& [name, cluster] : cfg.clusters) {
    auto* standby = std::get_if<PostgresCluster>(&cluster);
    if (standby == nullptr || !standby->source_cluster) {
      continue;
    }
    const auto it = cfg.clusters.find(*standby->source_cluster);
    if (it == cfg.clusters.end() || !std::holds_alternative<PostgresCluster>(it->second)) {
      continue; // check_source_clusters() reported it
    }
    standby->source =
        std::make_shared<const PostgresCluster>(std::get<PostgresCluster>(it->second));
    if (const auto bad = cfg.unreadable.find(it->first); bad != cfg.unreadable.end()) {
      // Only the source's own checks fail on it; the standby's readers keep the commit age.
      standby->source_unusable =
          bad->second.empty() ? "a password file cannot be read" : bad->second.front();
    }
  }
}

} // namespace dbcheck::config
