// The file as a whole: its sections, [defaults] and [backend.NAME] (a backend's settings fall
// back on [defaults]), and the references between sections, checked once everything is read.
// The cluster sections are cluster_section.cpp's, [agent] and [log] host_sections.cpp's.
#include "load_config.hpp"

#include "cluster_section.hpp"
#include "host_sections.hpp"
#include "source_cluster.hpp"
#include "toml_guard.hpp"
#include "toml_reader.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dbcheck::config {
namespace {

// Settings that [defaults] provides and a backend may override; without [defaults], the
// Backend's own (config.hpp is the one place they are written).
struct Defaults {
  util::Duration timeout = Backend{}.timeout;
  int timeout_line = 0;
  util::Duration max_lag = Backend{}.max_lag;
  core::SaturationPolicy on_saturation = Backend{}.on_saturation;
};

// A backend as written, before defaults are applied.
struct BackendDraft {
  Backend backend;
  std::optional<util::Duration> timeout;
  std::optional<util::Duration> max_lag;
  std::optional<core::SaturationPolicy> on_saturation;
  toml::source_region where;
  toml::source_region cluster_where;
  toml::source_region max_lag_where;
  toml::source_region max_latency_where;
  toml::source_region saturation_where;
  std::optional<toml::source_region> readers_where; // set when `readers` was written
  bool has_cluster = false;
  bool has_role = false;
};

// on_saturation: what a writer check answers when the node refuses new sessions.
std::optional<core::SaturationPolicy> want_saturation(const toml::node& n, Errors& e,
                                                      const std::string& key) {
  if (auto v = want_one_of(n, e, key, {"up", "down"})) {
    return *v == "down" ? core::SaturationPolicy::down : core::SaturationPolicy::up;
  }
  return std::nullopt;
}

const std::vector<KeySpec<Defaults>>& defaults_keys() {
  using D = Defaults;
  static const std::vector<KeySpec<D>> k = {
      {"timeout",
       [](D& d, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_duration(n, e, key)) {
           d.timeout = *v;
           d.timeout_line = static_cast<int>(n.source().begin.line);
         }
       }},
      store("max_lag", &D::max_lag, want_duration),
      store("on_saturation", &D::on_saturation, want_saturation),
  };
  return k;
}

const std::vector<KeySpec<BackendDraft>>& backend_keys() {
  using B = BackendDraft;
  static const std::vector<KeySpec<B>> k = {
      {"cluster",
       [](B& b, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_string(n, e, key)) {
           b.backend.cluster = *v;
           b.has_cluster = true;
           b.cluster_where = n.source();
         }
       }},
      {"role",
       [](B& b, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_one_of(n, e, key, {"primary", "replica"})) {
           b.backend.role = *v == "primary" ? Role::primary : Role::replica;
           b.has_role = true;
         }
       }},
      {"timeout",
       [](B& b, const toml::node& n, Errors& e, const std::string& key) {
         b.timeout = want_duration(n, e, key);
         b.backend.timeout_line = static_cast<int>(n.source().begin.line);
       }},
      {"max_lag",
       [](B& b, const toml::node& n, Errors& e, const std::string& key) {
         b.max_lag = want_duration(n, e, key);
         b.max_lag_where = n.source();
       }},
      {"max_latency",
       [](B& b, const toml::node& n, Errors& e, const std::string& key) {
         b.backend.max_latency = want_duration(n, e, key);
         b.max_latency_where = n.source();
       }},
      {"on_saturation",
       [](B& b, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_saturation(n, e, key)) {
           b.on_saturation = *v;
           b.saturation_where = n.source();
         }
       }},
      {"readers",
       [](B& b, const toml::node& n, Errors& e, const std::string& key) {
         b.readers_where = n.source();
         if (auto v = want_one_of(n, e, key, {"any", "synchronous"})) {
           b.backend.readers =
               *v == "synchronous" ? core::ReaderChoice::synchronous : core::ReaderChoice::any;
         }
       }},
  };
  return k;
}

} // namespace

tl::expected<Config, ConfigError> parse_config(std::string_view text, const std::string& path) {
  Errors e(path);
  toml::table root;
  if (const auto hazard = find_toml_hazard(text)) {
    e.add_plain(util::format("{}:{}: invalid TOML: {}", path, hazard->line, hazard->why));
    return tl::make_unexpected(e.take());
  }
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& err) {
    e.add_plain(
        util::format("{}:{}: invalid TOML: {}", path, err.source().begin.line, err.description()));
    return tl::make_unexpected(e.take());
  }

  Defaults defaults;
  Config cfg;
  cfg.path = path;
  std::vector<BackendDraft> drafts;

  for (auto&& [k, node] : root) {
    const std::string section{k.str()};
    if (section == "defaults") {
      if (const toml::table* t = node.as_table()) {
        apply_keys(*t, defaults_keys(), "defaults", defaults, e);
      } else {
        e.add(k.source(), "defaults", "expected a table [defaults]");
      }
    } else if (section == "cluster") {
      for_each_named_table(
          node, "cluster", e,
          [&](const std::string& name, const toml::table& t, const toml::source_region& where) {
            parse_cluster(name, t, where, cfg, e);
          });
    } else if (section == "agent") {
      parse_agent(node, k.source(), cfg, e);
    } else if (section == "log") {
      parse_log(node, k.source(), cfg, e);
    } else if (section == "backend") {
      for_each_named_table(
          node, "backend", e,
          [&](const std::string& name, const toml::table& t, const toml::source_region& where) {
            BackendDraft d;
            d.backend.name = name;
            d.backend.line = static_cast<int>(where.begin.line);
            d.where = where;
            apply_keys(t, backend_keys(), "backend." + name, d, e);
            drafts.push_back(std::move(d));
          });
    } else {
      e.add(k.source(), section,
            util::format("unknown section [{}] (expected [defaults], [cluster.NAME], "
                         "[backend.NAME], [agent] or [log])",
                         section));
    }
  }

  for (BackendDraft& d : drafts) {
    Backend& b = d.backend;
    const std::string sec = "backend." + b.name;
    if (!d.has_cluster) {
      e.add(d.where, sec, "missing required key \"cluster\"");
    } else if (cfg.clusters.find(b.cluster) == cfg.clusters.end()) {
      e.add(d.cluster_where, sec + ".cluster",
            util::format("no [cluster.{}] is defined", b.cluster));
    }
    if (!d.has_role) {
      e.add(d.where, sec, "missing required key \"role\" (\"primary\" or \"replica\")");
    }
    // A role that failed to parse has been reported already; do not pile on.
    if (d.has_role && d.max_lag && b.role == Role::primary) {
      e.add(d.max_lag_where, sec + ".max_lag", "applies only to role = \"replica\"");
    }
    if (d.has_role && d.readers_where && b.role == Role::primary) {
      e.add(*d.readers_where, sec + ".readers", "applies only to role = \"replica\"");
    }
    if (const auto c = cfg.clusters.find(b.cluster);
        d.readers_where && c != cfg.clusters.end() &&
        !std::holds_alternative<PostgresCluster>(c->second)) {
      e.add(*d.readers_where, sec + ".readers",
            "applies only to PostgreSQL clusters (Redis replication is asynchronous)");
    }
    if (d.has_role && d.on_saturation && b.role == Role::replica) {
      e.add(d.saturation_where, sec + ".on_saturation", "applies only to role = \"primary\"");
    }
    b.timeout = d.timeout.value_or(defaults.timeout);
    if (!d.timeout) {
      b.timeout_line = defaults.timeout_line;
    }
    b.max_lag = d.max_lag.value_or(defaults.max_lag);
    // A bound at or past the deadline could never fire: the check times out first.
    if (b.max_latency && *b.max_latency >= b.timeout) {
      e.add(d.max_latency_where, sec + ".max_latency",
            util::format("max_latency {} must be below timeout {}",
                         util::format_duration(*b.max_latency), util::format_duration(b.timeout)));
    }
    b.on_saturation = d.on_saturation.value_or(defaults.on_saturation);
    cfg.backends.emplace(b.name, std::move(b));
  }
  if (cfg.agent) {
    // Names in [agent] refer to the rest of the file: check them once everything is read.
    for (const auto& [cluster, _] : cfg.agent->local) {
      if (cfg.clusters.find(cluster) == cfg.clusters.end()) {
        e.add_plain(
            util::format("{}: agent.local.{}: no [cluster.{}] is defined", path, cluster, cluster));
      }
    }
    if (cfg.agent->default_backend &&
        cfg.backends.find(*cfg.agent->default_backend) == cfg.backends.end()) {
      e.add_plain(util::format("{}: agent.default_backend: no [backend.{}] is defined", path,
                               *cfg.agent->default_backend));
    }
  }
  check_source_clusters(cfg, e);
  if (cfg.backends.empty() && !e.any()) {
    e.add_plain(util::format("{}: no [backend.NAME] is defined: HAProxy's backend names must "
                             "appear here",
                             path));
  }
  if (e.any()) {
    return tl::make_unexpected(e.take());
  }
  cfg.unreadable = e.take_unreadable();
  link_source_clusters(cfg);
  cfg.warnings = e.warnings_for([&cfg](const std::string& cluster) {
    return std::any_of(cfg.backends.begin(), cfg.backends.end(), [&](const auto& b) {
      return b.second.cluster == cluster && b.second.role == Role::primary;
    });
  });
  return cfg;
}

tl::expected<Config, ConfigError> load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return tl::make_unexpected(ConfigError{
        {util::format("{}: cannot read configuration: {}", path, std::strerror(errno))}});
  }
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_config(buf.str(), path);
}

tl::expected<Config, ConfigError> all_readable(tl::expected<Config, ConfigError> loaded) {
  if (!loaded || loaded->unreadable.empty()) {
    return loaded;
  }
  ConfigError e;
  for (const auto& [cluster, messages] : loaded->unreadable) {
    e.messages.insert(e.messages.end(), messages.begin(), messages.end());
  }
  return tl::make_unexpected(std::move(e));
}

} // namespace dbcheck::config
