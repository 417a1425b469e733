// The only file that includes toml++ (a heavy header): everything TOML stops here. Over ~350
// lines on purpose: the key tables of each section need toml++'s node type, and splitting them
// into files of their own would compile toml++ once per file (the project keeps heavy headers
// in one .cpp each). Its parts, in order: the error collector and the typed readers
// ("want_*"), the key table of each section (the defaults live in config.hpp), the sections,
// and the cross-references between them (parse_config).
#include "load_config.hpp"

#include "client_cert_files.hpp"
#include "toml_guard.hpp"

#include <util/format.hpp>
#include <util/host_port.hpp>
#include <util/url.hpp>

#include <toml++/toml.h>

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <tuple>

namespace dbcheck::config {
namespace {

// Collects errors with the file name and line of the offending key.
class Errors {
public:
  explicit Errors(std::string path) : m_path(std::move(path)) {}
  void add(const toml::source_region& where, std::string_view key, std::string_view what) {
    m_messages.emplace_back(where.begin.line,
                            util::format("{}:{}: {}: {}", m_path, where.begin.line, key, what));
  }
  void add_plain(std::string message) { m_messages.emplace_back(0, std::move(message)); }
  // A password file of `cluster` that cannot be read: an error of that cluster alone (see
  // Config::unreadable), unless the file has other errors too.
  void unreadable(const std::string& cluster, const toml::source_region& where,
                  std::string_view key, std::string_view what) {
    m_unreadable.push_back({cluster, where.begin.line,
                            util::format("{}:{}: {}: {}", m_path, where.begin.line, key, what)});
  }
  // A setting of `cluster` that works but is unsafe for a writer: kept until parse_config knows
  // whether a writer backend uses the cluster.
  void warn(const std::string& cluster, const toml::source_region& where, std::string_view key,
            std::string_view what) {
    m_warnings.push_back({cluster, where.begin.line,
                          util::format("{}:{}: {}: {}", m_path, where.begin.line, key, what)});
  }
  // The warnings of the clusters `wanted` says a writer uses, in file order.
  std::vector<std::string> warnings_for(const std::function<bool(const std::string&)>& wanted) {
    std::stable_sort(m_warnings.begin(), m_warnings.end(),
                     [](const auto& a, const auto& b) { return a.line < b.line; });
    std::vector<std::string> out;
    for (auto& w : m_warnings) {
      if (wanted(w.cluster)) {
        out.push_back(std::move(w.text));
      }
    }
    return out;
  }
  // True when the file has errors beyond unreadable password files.
  bool any() const { return !m_messages.empty(); }
  // Every message (unreadable password files included) in file order (toml++ iterates keys
  // alphabetically, people read top-down).
  ConfigError take() {
    for (auto& u : m_unreadable) {
      m_messages.emplace_back(u.line, std::move(u.text));
    }
    m_unreadable.clear();
    std::stable_sort(m_messages.begin(), m_messages.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    ConfigError out;
    for (auto& [line, text] : m_messages) {
      out.messages.push_back(std::move(text));
    }
    return out;
  }
  // The unreadable password files by cluster, for a file that has no other error.
  std::map<std::string, std::vector<std::string>> take_unreadable() {
    std::map<std::string, std::vector<std::string>> out;
    for (auto& u : m_unreadable) {
      out[u.cluster].push_back(std::move(u.text));
    }
    m_unreadable.clear();
    return out;
  }
  const std::string& path() const { return m_path; }

private:
  struct Unreadable {
    std::string cluster;
    toml::source_index line;
    std::string text;
  };
  std::vector<Unreadable> m_warnings; // the same shape: a cluster's message at a line
  std::string m_path;
  std::vector<std::pair<toml::source_index, std::string>> m_messages;
  std::vector<Unreadable> m_unreadable;
};

// One key of a section: its name and how to store it.
template <class Target>
struct KeySpec {
  std::string_view name;
  std::function<void(Target&, const toml::node&, Errors&, const std::string& key)> apply;
};

std::string join_names(auto const& specs) {
  std::string out;
  for (const auto& s : specs) {
    out += out.empty() ? "" : ", ";
    out += s.name;
  }
  return out;
}

// How a TOML value's type reads in an error message ("an integer").
std::string describe(toml::node_type t) {
  switch (t) {
  case toml::node_type::string:
    return "a string";
  case toml::node_type::integer:
    return "an integer";
  case toml::node_type::floating_point:
    return "a number";
  case toml::node_type::boolean:
    return "a boolean";
  case toml::node_type::array:
    return "a list";
  case toml::node_type::table:
    return "a table";
  case toml::node_type::date:
  case toml::node_type::time:
  case toml::node_type::date_time:
    return "a date/time";
  default:
    return "nothing";
  }
}

std::optional<std::string> want_string(const toml::node& n, Errors& e, const std::string& key) {
  if (auto v = n.value<std::string>(); v && n.is_string()) {
    return v;
  }
  e.add(n.source(), key, util::format("expected a string, got {}", describe(n.type())));
  return std::nullopt;
}

std::optional<bool> want_bool(const toml::node& n, Errors& e, const std::string& key) {
  if (n.is_boolean()) {
    return *n.value<bool>();
  }
  e.add(n.source(), key, util::format("expected true or false, got {}", describe(n.type())));
  return std::nullopt;
}

std::optional<util::Duration> want_duration(const toml::node& n, Errors& e,
                                            const std::string& key) {
  auto s = want_string(n, e, key);
  if (!s) {
    return std::nullopt;
  }
  auto d = util::parse_duration(*s);
  if (!d) {
    e.add(n.source(), key, d.error());
    return std::nullopt;
  }
  if (d->count() <= 0) {
    e.add(n.source(), key, util::format("\"{}\" must be longer than 0ms", *s));
    return std::nullopt;
  }
  return *d;
}

std::optional<std::string> want_one_of(const toml::node& n, Errors& e, const std::string& key,
                                       std::initializer_list<std::string_view> allowed) {
  auto s = want_string(n, e, key);
  if (!s) {
    return std::nullopt;
  }
  if (std::find(allowed.begin(), allowed.end(), *s) == allowed.end()) {
    std::string list;
    for (auto a : allowed) {
      list += list.empty() ? "" : ", ";
      list += util::format("\"{}\"", a);
    }
    e.add(n.source(), key, util::format("\"{}\" is not one of {}", *s, list));
    return std::nullopt;
  }
  return s;
}

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
  toml::source_region saturation_where;
  std::optional<toml::source_region> readers_where; // set when `readers` was written
  bool has_cluster = false;
  bool has_role = false;
};

core::SaturationPolicy to_saturation(const std::string& s) {
  return s == "down" ? core::SaturationPolicy::down : core::SaturationPolicy::up;
}

const std::vector<KeySpec<Defaults>>& defaults_keys() {
  static const std::vector<KeySpec<Defaults>> k = {
      {"timeout",
       [](Defaults& d, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_duration(n, e, key)) {
           d.timeout = *v;
           d.timeout_line = static_cast<int>(n.source().begin.line);
         }
       }},
      {"max_lag",
       [](Defaults& d, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_duration(n, e, key)) {
           d.max_lag = *v;
         }
       }},
      {"on_saturation",
       [](Defaults& d, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_one_of(n, e, key, {"up", "down"})) {
           d.on_saturation = to_saturation(*v);
         }
       }},
  };
  return k;
}

// "engine" is read before the other keys, to choose the table; here it only has to be known.
template <class Target>
KeySpec<Target> engine_key() {
  return {"engine", [](Target&, const toml::node&, Errors&, const std::string&) {}};
}

// True when two Patroni REST URLs reach the same member: the same origin (scheme, host, port,
// credentials aside) and the same path below it.
bool same_member_url(const std::string& a, const std::string& b) {
  const auto path = [](const std::string& u) {
    const auto scheme = u.find("://");
    const auto slash = u.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    return slash == std::string::npos ? std::string{} : u.substr(slash);
  };
  const auto oa = util::url_origin(a);
  return oa && oa == util::url_origin(b) && path(a) == path(b);
}

// The secret in the file `n` names, for `cluster`. A file that cannot be read (missing, too
// open, empty) is that cluster's problem alone: checks of the other clusters still run.
std::optional<Secret> want_secret_file(const std::string& cluster, const toml::node& n, Errors& e,
                                       const std::string& key) {
  auto v = want_string(n, e, key);
  if (!v) {
    return std::nullopt;
  }
  auto secret = read_password_file(*v);
  if (!secret) {
    e.unreadable(cluster, n.source(), key, secret.error());
    return std::nullopt;
  }
  return std::move(*secret);
}

const std::vector<KeySpec<PostgresCluster>>& postgres_keys() {
  static const std::vector<KeySpec<PostgresCluster>> k = {
      engine_key<PostgresCluster>(),
      {"patroni",
       [](PostgresCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         const toml::array* arr = n.as_array();
         if (arr == nullptr || arr->empty()) {
           e.add(n.source(), key,
                 "expected a non-empty list of Patroni REST URLs, e.g. "
                 "[\"http://10.0.0.1:8008\"]");
           return;
         }
         for (const toml::node& item : *arr) {
           auto url = want_string(item, e, key);
           if (!url) {
             continue;
           }
           if (url->rfind("http://", 0) != 0 && url->rfind("https://", 0) != 0) {
             e.add(
                 item.source(), key,
                 util::format("\"{}\" is not an http:// or https:// URL", util::redact_url(*url)));
             continue;
           }
           while (!url->empty() && url->back() == '/') {
             url->pop_back();
           }
           // The same member listed twice would count twice towards the members' majority.
           const auto same =
               std::find_if(c.patroni.begin(), c.patroni.end(),
                            [&](const std::string& u) { return same_member_url(u, *url); });
           if (same != c.patroni.end()) {
             e.add(item.source(), key,
                   util::format("\"{}\" is listed twice (also as \"{}\"): each member must appear "
                                "once, or it would count twice towards the majority",
                                util::redact_url(*url), util::redact_url(*same)));
             continue;
           }
           c.patroni.push_back(*url);
         }
       }},
      {"dbname",
       [](PostgresCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_string(n, e, key)) {
           c.dbname = *v;
         }
       }},
      {"user",
       [](PostgresCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_string(n, e, key)) {
           c.user = *v;
         }
       }},
      {"password_file",
       [](PostgresCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         c.password_file = n.value<std::string>();
         if (auto secret = want_secret_file(c.name, n, e, key)) {
           c.password = std::move(*secret);
         }
       }},
      {"sslmode",
       [](PostgresCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_one_of(
                 n, e, key,
                 {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"})) {
           c.sslmode = *v;
         }
       }},
      {"sslrootcert", [](PostgresCluster& c, const toml::node& n, Errors& e,
                         const std::string& key) { c.sslrootcert = want_string(n, e, key); }},
      // Paths libpq opens itself; an unusable one makes only this cluster unusable, as an
      // unreadable password file does.
      {"sslcert",
       [](PostgresCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         c.sslcert = want_string(n, e, key);
         if (c.sslcert) {
           if (auto bad = certificate_file_problem(*c.sslcert)) {
             e.unreadable(c.name, n.source(), key, *bad);
           }
         }
       }},
      {"sslkey",
       [](PostgresCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         c.sslkey = want_string(n, e, key);
         if (c.sslkey) {
           if (auto bad = key_file_problem(*c.sslkey)) {
             e.unreadable(c.name, n.source(), key, *bad);
           }
         }
       }},
      {"require_tls",
       [](PostgresCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_bool(n, e, key)) {
           c.require_tls = *v;
         }
       }},
      {"shared_view_max_age",
       [](PostgresCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_duration(n, e, key)) {
           if (*v > util::Duration{2000}) {
             e.add(n.source(), key,
                   "at most 2s: the checks would keep naming a writer the members may no "
                   "longer name (at most HAProxy's inter; leave it out to ask the members on every "
                   "check)");
             return;
           }
           c.shared_view_max_age = *v;
           c.shared_view_max_age_line = static_cast<int>(n.source().begin.line);
         }
       }},
      {"shared_view_dir",
       [](PostgresCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         auto v = want_string(n, e, key);
         if (v && (v->empty() || v->front() != '/')) {
           e.add(n.source(), key, util::format("\"{}\" is not an absolute path", *v));
           return;
         }
         c.shared_view_dir = v;
       }},
      {"operator_user", [](PostgresCluster& c, const toml::node& n, Errors& e,
                           const std::string& key) { c.operator_user = want_string(n, e, key); }},
      // Only a path: read when `dbcheck switchover` runs, as the operator, never by a check.
      {"operator_password_file",
       [](PostgresCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         c.operator_password_file = want_string(n, e, key);
       }},
      {"patroni_cafile", [](PostgresCluster& c, const toml::node& n, Errors& e,
                            const std::string& key) { c.patroni_cafile = want_string(n, e, key); }},
      {"patroni_certfile",
       [](PostgresCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         c.patroni_certfile = want_string(n, e, key);
       }},
      {"patroni_keyfile",
       [](PostgresCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         c.patroni_keyfile = want_string(n, e, key);
       }},
  };
  return k;
}

std::optional<util::HostPort> want_host_port(const toml::node& n, Errors& e,
                                             const std::string& key) {
  auto s = want_string(n, e, key);
  if (!s) {
    return std::nullopt;
  }
  auto hp = util::parse_host_port(*s);
  if (!hp) {
    e.add(n.source(), key, hp.error());
    return std::nullopt;
  }
  return *hp;
}

std::vector<KeySpec<RedisCluster>> redis_tls_keys(const std::string& prefix,
                                                  RedisTls RedisCluster::*which);

const std::vector<KeySpec<RedisCluster>>& redis_keys() {
  static const std::vector<KeySpec<RedisCluster>> k = {
      engine_key<RedisCluster>(),
      {"sentinels",
       [](RedisCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         const toml::array* arr = n.as_array();
         if (arr == nullptr || arr->empty()) {
           e.add(n.source(), key,
                 "expected a non-empty list of Sentinel addresses, e.g. "
                 "[\"10.0.0.1:26379\", \"10.0.0.2:26379\", \"10.0.0.3:26379\"]");
           return;
         }
         for (const toml::node& item : *arr) {
           auto hp = want_host_port(item, e, key);
           if (!hp) {
             continue;
           }
           // A Sentinel listed twice would vote twice: the majority counts distinct Sentinels.
           const auto same =
               std::find_if(c.sentinels.begin(), c.sentinels.end(),
                            [&](const util::HostPort& s) { return util::same_endpoint(s, *hp); });
           if (same != c.sentinels.end()) {
             e.add(item.source(), key,
                   util::format("Sentinel {} is listed twice (as \"{}\" and \"{}\"): each Sentinel "
                                "must appear once, or it would count twice towards the majority",
                                util::to_string(*hp), util::to_string(*same),
                                util::to_string(*hp)));
             continue;
           }
           c.sentinels.push_back(*hp);
         }
       }},
      {"master_name",
       [](RedisCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_string(n, e, key)) {
           c.master_name = *v;
         }
       }},
      {"user", [](RedisCluster& c, const toml::node& n, Errors& e,
                  const std::string& key) { c.user = want_string(n, e, key); }},
      {"password_file",
       [](RedisCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         if (auto secret = want_secret_file(c.name, n, e, key)) {
           c.password = std::move(*secret);
         }
       }},
      {"sentinel_user", [](RedisCluster& c, const toml::node& n, Errors& e,
                           const std::string& key) { c.sentinel_user = want_string(n, e, key); }},
      {"sentinel_password_file",
       [](RedisCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         if (auto secret = want_secret_file(c.name, n, e, key)) {
           c.sentinel_password = std::move(*secret);
         }
       }},
      {"operator_user", [](RedisCluster& c, const toml::node& n, Errors& e,
                           const std::string& key) { c.operator_user = want_string(n, e, key); }},
      {"operator_password_file",
       [](RedisCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         c.operator_password_file = want_string(n, e, key);
       }},
      {"require_tls",
       [](RedisCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_bool(n, e, key)) {
           c.require_tls = *v;
         }
       }},
  };
  static const std::vector<KeySpec<RedisCluster>> all = [] {
    std::vector<KeySpec<RedisCluster>> v = k;
    for (auto& spec : redis_tls_keys("", &RedisCluster::tls)) {
      v.push_back(std::move(spec));
    }
    for (auto& spec : redis_tls_keys("sentinel_", &RedisCluster::sentinel_tls)) {
      v.push_back(std::move(spec));
    }
    return v;
  }();
  return all;
}

// Why a file a TLS key names is unusable, with its key: a CA bundle or certificate (`what`)
// must be readable, a key (`what` null) meets the password-file rules (client_cert_files.hpp). Only
// this cluster is then unusable, as with an unreadable password file.
void want_tls_file(RedisCluster& c, std::optional<std::string>& field, const char* what,
                   const toml::node& n, Errors& e, const std::string& key) {
  field = want_string(n, e, key);
  if (field) {
    if (auto bad =
            what == nullptr ? key_file_problem(*field) : certificate_file_problem(*field, what)) {
      e.unreadable(c.name, n.source(), key, *bad);
    }
  }
}

// The TLS keys of one kind of link (`prefix` "": the data nodes, "sentinel_": the Sentinels),
// named after Redis's own tls-* settings.
std::vector<KeySpec<RedisCluster>> redis_tls_keys(const std::string& prefix,
                                                  RedisTls RedisCluster::*which) {
  static std::deque<std::string> names; // KeySpec holds views: the names must outlive it
  const auto name = [&](const char* base) -> std::string_view {
    return names.emplace_back(prefix + base);
  };
  return {
      {name("tls"),
       [which](RedisCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_bool(n, e, key)) {
           (c.*which).enabled = *v;
         }
       }},
      {name("tls_ca_cert_file"),
       [which](RedisCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         want_tls_file(c, (c.*which).ca_cert_file, "CA bundle", n, e, key);
       }},
      {name("tls_cert_file"),
       [which](RedisCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         want_tls_file(c, (c.*which).cert_file, "client certificate", n, e, key);
       }},
      {name("tls_key_file"),
       [which](RedisCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         want_tls_file(c, (c.*which).key_file, nullptr, n, e, key);
       }},
      {name("tls_server_name"),
       [which](RedisCluster& c, const toml::node& n, Errors& e, const std::string& key) {
         auto v = want_string(n, e, key);
         if (!v) {
           return;
         }
         if (const std::string bad = util::server_name_problem(*v); !bad.empty()) {
           e.add(n.source(), key, "expected a host name or an IP address: " + bad);
           return;
         }
         (c.*which).server_name = v;
       }},
  };
}

template <class Target>
void apply_keys(const toml::table& table, const std::vector<KeySpec<Target>>& specs,
                const std::string& section, Target& target, Errors& e,
                std::string_view (*refused)(std::string_view) = nullptr);

// Why a Redis cluster cannot take `key` (empty: it is merely unknown): PostgreSQL's and other
// clients' TLS spellings are named with the key Redis clusters use, rather than reported as a
// typo.
std::string_view redis_refused(std::string_view key) {
  static constexpr std::array<std::string_view, 5> k_other = {"ssl", "sslmode", "sslrootcert",
                                                              "tls_cafile", "sentinel_tls_cafile"};
  if (std::find(k_other.begin(), k_other.end(), key) == k_other.end()) {
    return {};
  }
  return "not a Redis key: TLS to the data nodes is tls = true with tls_ca_cert_file (and "
         "tls_cert_file, tls_key_file, tls_server_name), to the Sentinels the same keys "
         "prefixed sentinel_";
}

std::optional<int> want_count(const toml::node& n, Errors& e, const std::string& key) {
  const auto v = n.value<int64_t>();
  if (!n.is_integer() || !v || *v < 1 || *v > 100) {
    e.add(n.source(), key, "expected a whole number from 1 to 100");
    return std::nullopt;
  }
  return static_cast<int>(*v);
}

const std::vector<KeySpec<AgentSettings>>& agent_keys() {
  using A = AgentSettings;
  const auto duration = [](util::Duration A::*field) {
    return [field](A& a, const toml::node& n, Errors& e, const std::string& key) {
      if (auto v = want_duration(n, e, key)) {
        a.*field = *v;
      }
    };
  };
  const auto address = [](util::HostPort A::*field) {
    return [field](A& a, const toml::node& n, Errors& e, const std::string& key) {
      if (auto v = want_host_port(n, e, key)) {
        a.*field = *v;
      }
    };
  };
  const auto count = [](int A::*field) {
    return [field](A& a, const toml::node& n, Errors& e, const std::string& key) {
      if (auto v = want_count(n, e, key)) {
        a.*field = *v;
      }
    };
  };
  static const std::vector<KeySpec<A>> k = {
      {"listen", address(&A::listen)},
      {"http_listen", address(&A::http_listen)},
      {"interval", duration(&A::interval)},
      {"fastinter", duration(&A::fastinter)},
      {"fall", count(&A::fall)},
      {"rise", count(&A::rise)},
      {"lag_window", duration(&A::lag_window)},
      {"stale_after", duration(&A::stale_after)},
      {"shutdown_grace", duration(&A::shutdown_grace)},
      {"ready_window", duration(&A::ready_window)},
      {"drain_file", [](A& a, const toml::node& n, Errors& e,
                        const std::string& key) { a.drain_file = want_string(n, e, key); }},
      {"state_dir",
       [](A& a, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_string(n, e, key)) {
           a.state_dir = *v;
         }
       }},
      {"default_backend",
       [](A& a, const toml::node& n, Errors& e, const std::string& key) {
         a.default_backend = want_string(n, e, key);
       }},
      {"max_connections",
       [](A& a, const toml::node& n, Errors& e, const std::string& key) {
         const auto v = n.value<int64_t>();
         if (!n.is_integer() || !v || *v < 1 || *v > 1'000'000) {
           e.add(n.source(), key, "expected a whole number from 1 to 1000000");
           return;
         }
         a.max_connections = static_cast<std::size_t>(*v);
       }},
      {"allow",
       [](A& a, const toml::node& n, Errors& e, const std::string& key) {
         const toml::array* arr = n.as_array();
         if (arr == nullptr || arr->empty()) {
           e.add(n.source(), key,
                 "expected a non-empty list of addresses or ranges allowed to ask the agent, "
                 "e.g. [\"10.0.0.10\", \"10.0.1.0/24\"] (HAProxy's hosts)");
           return;
         }
         for (const toml::node& item : *arr) {
           if (auto text = want_string(item, e, key)) {
             if (auto c = util::parse_cidr(*text)) {
               a.allow.push_back(*c);
             } else {
               e.add(item.source(), key, c.error());
             }
           }
         }
       }},
      {"expose_reasons",
       [](A& a, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_bool(n, e, key)) {
           a.expose_reasons = *v;
         }
       }},
      {"http_certfile", [](A& a, const toml::node& n, Errors& e,
                           const std::string& key) { a.http_certfile = want_string(n, e, key); }},
      {"http_keyfile", [](A& a, const toml::node& n, Errors& e,
                          const std::string& key) { a.http_keyfile = want_string(n, e, key); }},
      // [agent.local] is a table of its own, read by parse_agent.
      {"local", [](A&, const toml::node&, Errors&, const std::string&) {}},
  };
  return k;
}

const std::vector<KeySpec<LogSettings>>& log_keys() {
  static const std::vector<KeySpec<LogSettings>> k = {
      {"passes",
       [](LogSettings& l, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_one_of(n, e, key, {"changes", "all"})) {
           l.passes = *v == "all" ? core::PassLogging::all : core::PassLogging::changes;
         }
       }},
      {"pass_heartbeat",
       [](LogSettings& l, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_duration(n, e, key)) {
           l.pass_heartbeat = *v;
         }
       }},
      {"state_dir",
       [](LogSettings& l, const toml::node& n, Errors& e, const std::string& key) {
         auto v = want_string(n, e, key);
         if (v && (v->empty() || v->front() != '/')) {
           e.add(n.source(), key, util::format("\"{}\" is not an absolute path", *v));
           return;
         }
         l.state_dir = v;
       }},
  };
  return k;
}

// The [agent] section and its [agent.local] table of cluster -> this host's node.
void parse_agent(const toml::node& node, const toml::source_region& where, Config& cfg, Errors& e) {
  const toml::table* t = node.as_table();
  if (t == nullptr) {
    e.add(where, "agent", "expected a table [agent]");
    return;
  }
  AgentSettings a;
  apply_keys(*t, agent_keys(), "agent", a, e);
  if (const toml::node* local = t->get("local")) {
    const toml::table* lt = local->as_table();
    if (lt == nullptr) {
      e.add(local->source(), "agent.local",
            "expected a table [agent.local] of cluster = \"host:port\"");
    } else {
      for (auto&& [k, v] : *lt) {
        const std::string key = util::format("agent.local.{}", k.str());
        if (auto hp = want_host_port(v, e, key)) {
          a.local.emplace(std::string{k.str()}, *hp);
        }
      }
    }
  }
  // Where the agent listens and who may ask it are stated, never defaulted: its answers can take
  // every server of the host down.
  for (const auto& [key, example] :
       {std::pair{"listen", "\"10.0.0.1:5555\" (this host's address on HAProxy's network)"},
        std::pair{"http_listen", "\"10.0.0.1:8091\""},
        std::pair{"allow", "[\"10.0.0.10\", \"10.0.0.11\"] (the HAProxy hosts)"}}) {
    if (t->get(key) == nullptr) {
      e.add(where, util::format("agent.{}", key), util::format("is required, e.g. {}", example));
    }
  }
  if (a.http_certfile.has_value() != a.http_keyfile.has_value()) {
    e.add(where, a.http_certfile ? "agent.http_keyfile" : "agent.http_certfile",
          "agent.http_certfile and agent.http_keyfile go together (HTTPS needs both)");
  }
  if (t->get("fastinter") == nullptr) {
    a.fastinter = std::min(a.fastinter, a.interval); // the default follows a short interval
  } else if (a.fastinter > a.interval) {
    e.add(where, "agent.fastinter", "must not be longer than agent.interval");
  } else if (4 * a.fastinter < a.interval) {
    // Faster would squeeze fall rounds into milliseconds (the same floor as event rounds).
    e.add(where, "agent.fastinter", "must be at least a quarter of agent.interval");
  }
  // Two rounds can be up to interval + one check (< interval) apart.
  if (a.stale_after < 2 * a.interval) {
    e.add(where, "agent.stale_after", "must be at least twice agent.interval");
  }
  cfg.agent = std::move(a);
}

const std::vector<KeySpec<BackendDraft>>& backend_keys() {
  static const std::vector<KeySpec<BackendDraft>> k = {
      {"cluster",
       [](BackendDraft& b, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_string(n, e, key)) {
           b.backend.cluster = *v;
           b.has_cluster = true;
           b.cluster_where = n.source();
         }
       }},
      {"role",
       [](BackendDraft& b, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_one_of(n, e, key, {"primary", "replica"})) {
           b.backend.role = *v == "primary" ? Role::primary : Role::replica;
           b.has_role = true;
         }
       }},
      {"timeout",
       [](BackendDraft& b, const toml::node& n, Errors& e, const std::string& key) {
         b.timeout = want_duration(n, e, key);
         b.backend.timeout_line = static_cast<int>(n.source().begin.line);
       }},
      {"max_lag",
       [](BackendDraft& b, const toml::node& n, Errors& e, const std::string& key) {
         b.max_lag = want_duration(n, e, key);
         b.max_lag_where = n.source();
       }},
      {"on_saturation",
       [](BackendDraft& b, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_one_of(n, e, key, {"up", "down"})) {
           b.on_saturation = to_saturation(*v);
           b.saturation_where = n.source();
         }
       }},
      {"readers",
       [](BackendDraft& b, const toml::node& n, Errors& e, const std::string& key) {
         b.readers_where = n.source();
         if (auto v = want_one_of(n, e, key, {"any", "synchronous"})) {
           b.backend.readers =
               *v == "synchronous" ? core::ReaderChoice::synchronous : core::ReaderChoice::any;
         }
       }},
  };
  return k;
}

// Applies each key of `table` through `specs`, reporting keys that are not in the table (with
// `refused`'s reason when it has one for the key).
template <class Target>
void apply_keys(const toml::table& table, const std::vector<KeySpec<Target>>& specs,
                const std::string& section, Target& target, Errors& e,
                std::string_view (*refused)(std::string_view)) {
  for (auto&& [k, node] : table) {
    const std::string key_name{k.str()};
    const std::string full = util::format("{}.{}", section, key_name);
    const auto spec =
        std::find_if(specs.begin(), specs.end(), [&](const auto& s) { return s.name == key_name; });
    if (spec == specs.end() && refused != nullptr && !refused(key_name).empty()) {
      e.add(k.source(), full, util::format("\"{}\": {}", key_name, refused(key_name)));
      continue;
    }
    if (spec == specs.end()) {
      e.add(k.source(), full,
            util::format("unknown key \"{}\" in [{}] (expected one of: {})", key_name, section,
                         join_names(specs)));
      continue;
    }
    spec->apply(target, node, e, full);
  }
}

// Calls `fn(name, table)` for each [prefix.NAME] table, reporting anything else under prefix.
void for_each_named_table(const toml::node& node, std::string_view prefix, Errors& e,
                          const std::function<void(const std::string&, const toml::table&,
                                                   const toml::source_region&)>& fn) {
  const toml::table* t = node.as_table();
  if (t == nullptr) {
    e.add(node.source(), prefix,
          util::format("expected tables like [{}.NAME], got {}", prefix, describe(node.type())));
    return;
  }
  for (auto&& [k, child] : *t) {
    const toml::table* ct = child.as_table();
    if (ct == nullptr) {
      e.add(k.source(), util::format("{}.{}", prefix, k.str()),
            util::format("expected a table [{}.{}], got {}", prefix, k.str(),
                         describe(child.type())));
      continue;
    }
    fn(std::string{k.str()}, *ct, k.source());
  }
}

// Reports each of `keys` that `table` lacks, at the section's header line.
void require_keys(const toml::table& table, std::initializer_list<const char*> keys,
                  const std::string& section, const toml::source_region& where, Errors& e) {
  for (const char* required : keys) {
    if (!table.contains(required)) {
      e.add(where, section, util::format("missing required key \"{}\"", required));
    }
  }
}

// The TLS settings of a Redis cluster taken together: files only with tls = true, a client
// certificate with its key, and no plain-text link under require_tls.
void check_redis_tls(const toml::table& t, const RedisCluster& c, const std::string& sec,
                     const toml::source_region& where, Errors& e) {
  // Where `key` is written, else the section's header.
  const auto at = [&](const std::string& key) {
    const toml::node* n = t.get(key);
    return n != nullptr ? n->source() : where;
  };
  for (const auto& [prefix, tls, whom] :
       {std::tuple{std::string{}, &c.tls, "the data nodes"},
        std::tuple{std::string{"sentinel_"}, &c.sentinel_tls, "the Sentinels"}}) {
    for (const char* base :
         {"tls_ca_cert_file", "tls_cert_file", "tls_key_file", "tls_server_name"}) {
      if (!tls->enabled && t.contains(prefix + base)) {
        e.add(at(prefix + base), sec + "." + prefix + base,
              util::format("needs {}tls = true", prefix));
      }
    }
    const std::string cert = prefix + "tls_cert_file";
    const std::string key = prefix + "tls_key_file";
    if (tls->enabled && t.contains(cert) != t.contains(key)) {
      const std::string& given = t.contains(cert) ? cert : key;
      e.add(
          at(given), sec + "." + given,
          util::format("needs {} and {} together (the client certificate and its key)", cert, key));
    }
    if (c.require_tls && !tls->enabled) {
      e.add(at("require_tls"), sec + "." + prefix + "tls",
            util::format("the links to {} are plain text: anyone on the path can pose as them "
                        "and read the check's password; set {}tls = true (require_tls = true)",
                        whom, prefix));
    }
  }
}

// One [cluster.NAME]: its engine chooses which keys are allowed and required.
void parse_cluster(const std::string& name, const toml::table& t, const toml::source_region& where,
                   Config& cfg, Errors& e) {
  const std::string sec = "cluster." + name;
  const toml::node* engine = t.get("engine");
  if (engine == nullptr) {
    e.add(where, sec, "missing required key \"engine\" (\"postgres\" or \"redis\")");
    return;
  }
  const auto kind = want_one_of(*engine, e, sec + ".engine", {"postgres", "redis"});
  if (!kind) {
    return;
  }
  if (*kind == "postgres") {
    PostgresCluster c;
    c.name = name;
    apply_keys(t, postgres_keys(), sec, c, e);
    require_keys(t, {"patroni", "dbname", "user"}, sec, where, e);
    if (c.sslmode.rfind("verify-", 0) == 0 && !c.sslrootcert) {
      e.add(where, sec + ".sslmode",
            util::format("\"{}\" needs sslrootcert (the CA that signed the servers' "
                         "certificates)",
                         c.sslmode));
    }
    // What a man in the middle could do to this cluster's writer: an error under require_tls,
    // else a warning once a writer backend uses the cluster (see parse_config).
    std::vector<std::pair<std::string, std::string>> exposed; // key, why
    if (c.sslmode != "verify-full") {
      exposed.emplace_back(
          sec + ".sslmode",
          util::format("\"{}\" does not verify the node: a man in the middle can strip TLS or pose "
                       "as the node, answer \"primary\" and read the check's password; set "
                       "sslmode = \"verify-full\" with sslrootcert",
                       c.sslmode));
    }
    for (const auto& url : c.patroni) {
      if (url.rfind("http://", 0) == 0) {
        exposed.emplace_back(sec + ".patroni",
                             util::format("\"{}\" is plain http: anyone on the path can forge the "
                                          "manager's opinion; use https:// with patroni_cafile",
                                          util::redact_url(url)));
        break;
      }
    }
    for (auto& [key, why] : exposed) {
      if (c.require_tls) {
        e.add(where, key, why + " (require_tls = true)");
      } else {
        e.warn(name, where, key, why + " (require_tls = true makes this an error)");
      }
    }
    if (t.contains("sslcert") != t.contains("sslkey")) {
      e.add(where, sec + (t.contains("sslcert") ? ".sslcert" : ".sslkey"),
            "needs sslcert and sslkey together (the client certificate and its key)");
    }
    if (c.patroni_certfile.has_value() != c.patroni_keyfile.has_value()) {
      e.add(where, sec + (c.patroni_certfile ? ".patroni_certfile" : ".patroni_keyfile"),
            "needs patroni_certfile and patroni_keyfile together (the client certificate and "
            "its key)");
    }
    cfg.clusters.emplace(name, std::move(c));
    return;
  }
  RedisCluster c;
  c.name = name;
  apply_keys(t, redis_keys(), sec, c, e, redis_refused);
  require_keys(t, {"sentinels", "master_name"}, sec, where, e);
  if (c.sentinel_user && !t.contains("sentinel_password_file")) {
    e.add(where, sec + ".sentinel_user", "needs sentinel_password_file as well");
  }
  check_redis_tls(t, c, sec, where, e);
  cfg.clusters.emplace(name, std::move(c));
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
      if (const toml::table* t = node.as_table()) {
        apply_keys(*t, log_keys(), "log", cfg.log, e);
      } else {
        e.add(k.source(), "log", "expected a table [log]");
      }
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
  if (cfg.backends.empty() && !e.any()) {
    e.add_plain(util::format("{}: no [backend.NAME] is defined: HAProxy's backend names must "
                             "appear here",
                             path));
  }
  if (e.any()) {
    return tl::make_unexpected(e.take());
  }
  cfg.unreadable = e.take_unreadable();
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
