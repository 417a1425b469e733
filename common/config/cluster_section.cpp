// The key tables of each engine's [cluster.NAME], and the rules across their keys.
#include "cluster_section.hpp"

#include "client_cert_files.hpp"

#include <util/url.hpp>

#include <array>
#include <deque>
#include <tuple>
#include <variant>

namespace dbcheck::config {
namespace {

using Pg = PostgresCluster;
using Rc = RedisCluster;

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

// patroni = [...]: the members' REST URLs, each once (a member listed twice would count twice
// towards the members' majority).
void read_patroni_urls(Pg& c, const toml::node& n, Errors& e, const std::string& key) {
  const toml::array* arr = n.as_array();
  if (arr == nullptr || arr->empty()) {
    e.add(n.source(), key,
          "expected a non-empty list of Patroni REST URLs, e.g. [\"http://10.0.0.1:8008\"]");
    return;
  }
  for (const toml::node& item : *arr) {
    auto url = want_string(item, e, key);
    if (!url) {
      continue;
    }
    if (url->rfind("http://", 0) != 0 && url->rfind("https://", 0) != 0) {
      e.add(item.source(), key,
            util::format("\"{}\" is not an http:// or https:// URL", util::redact_url(*url)));
      continue;
    }
    while (!url->empty() && url->back() == '/') {
      url->pop_back();
    }
    const auto same = std::find_if(c.patroni.begin(), c.patroni.end(),
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
}

// sentinels = [...]: each Sentinel once (one listed twice would vote twice).
void read_sentinels(Rc& c, const toml::node& n, Errors& e, const std::string& key) {
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
    const auto same =
        std::find_if(c.sentinels.begin(), c.sentinels.end(),
                     [&](const util::HostPort& s) { return util::same_endpoint(s, *hp); });
    if (same != c.sentinels.end()) {
      e.add(item.source(), key,
            util::format("Sentinel {} is listed twice (as \"{}\" and \"{}\"): each Sentinel "
                         "must appear once, or it would count twice towards the majority",
                         util::to_string(*hp), util::to_string(*same), util::to_string(*hp)));
      continue;
    }
    c.sentinels.push_back(*hp);
  }
}

// A key naming a file a TLS library opens itself: a CA bundle or certificate (`what`) must be
// readable, a key (`what` null) meets the password-file rules (client_cert_files.hpp). An
// unusable one makes only this cluster unusable, as an unreadable password file does.
template <class C>
void want_tls_file(C& c, std::optional<std::string>& field, const char* what, const toml::node& n,
                   Errors& e, const std::string& key) {
  field = want_string(n, e, key);
  if (field) {
    if (auto bad =
            what == nullptr ? key_file_problem(*field) : certificate_file_problem(*field, what)) {
      e.unreadable(c.name, n.source(), key, *bad);
    }
  }
}

// A row for such a file key of a PostgreSQL cluster.
KeySpec<Pg> pg_file(std::string_view name, std::optional<std::string> Pg::*field,
                    const char* what) {
  return {name, [field, what](Pg& c, const toml::node& n, Errors& e, const std::string& key) {
            want_tls_file(c, c.*field, what, n, e, key);
          }};
}

// A row for a secret read from the file the key names.
template <class C>
KeySpec<C> secret_file(std::string_view name, Secret C::*field) {
  return {name, [field](C& c, const toml::node& n, Errors& e, const std::string& key) {
            if (auto secret = want_secret_file(c.name, n, e, key)) {
              c.*field = std::move(*secret);
            }
          }};
}

const std::vector<KeySpec<Pg>>& postgres_keys() {
  static const std::vector<KeySpec<Pg>> k = {
      read_elsewhere<Pg>("engine"),
      {"patroni", read_patroni_urls},
      store("dbname", &Pg::dbname, want_string),
      store("user", &Pg::user, want_string),
      {"password_file",
       [](Pg& c, const toml::node& n, Errors& e, const std::string& key) {
         c.password_file = n.value<std::string>();
         if (auto secret = want_secret_file(c.name, n, e, key)) {
           c.password = std::move(*secret);
         }
       }},
      store("sslmode", &Pg::sslmode,
            [](const toml::node& n, Errors& e, const std::string& key) {
              return want_one_of(
                  n, e, key, {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"});
            }),
      store("sslrootcert", &Pg::sslrootcert, want_string),
      pg_file("sslcert", &Pg::sslcert, "client certificate"),
      pg_file("sslkey", &Pg::sslkey, nullptr),
      store("require_tls", &Pg::require_tls, want_bool),
      {"shared_view_max_age",
       [](Pg& c, const toml::node& n, Errors& e, const std::string& key) {
         c.shared_view_max_age_line = static_cast<int>(n.source().begin.line);
         if (n.value<std::string>() == "auto") {
           c.shared_view_max_age.reset();
           return;
         }
         if (auto v = want_duration_or_zero(n, e, key)) {
           if (*v > k_max_shared_view_max_age) {
             e.add(n.source(), key,
                   "at most 2s: the checks would keep naming a writer the members may no "
                   "longer name (at most HAProxy's inter; \"auto\" follows it; \"0s\" asks the "
                   "members on every check)");
             return;
           }
           c.shared_view_max_age = *v;
         }
       }},
      store("shared_view_dir", &Pg::shared_view_dir, want_absolute_path),
      store("operator_user", &Pg::operator_user, want_string),
      // Only a path: read when `dbcheck switchover` runs, as the operator, never by a check.
      store("operator_password_file", &Pg::operator_password_file, want_string),
      store("patroni_cafile", &Pg::patroni_cafile, want_string),
      store("patroni_certfile", &Pg::patroni_certfile, want_string),
      store("patroni_keyfile", &Pg::patroni_keyfile, want_string),
      store("data_directory", &Pg::data_directory, want_absolute_path),
      {"source_cluster",
       [](Pg& c, const toml::node& n, Errors& e, const std::string& key) {
         c.source_cluster = want_string(n, e, key);
         c.source_cluster_line = static_cast<int>(n.source().begin.line);
       }},
      store("write_probe", &Pg::write_probe, want_bool),
      {"min_free_space",
       [](Pg& c, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_space_floor(n, e, key)) {
           c.disk.min_free_space = *v;
         }
       }},
      {"min_free_inodes",
       [](Pg& c, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_whole_number(n, e, key, 1ULL << 40)) {
           c.disk.min_free_inodes = *v;
         }
       }},
  };
  return k;
}

// The TLS keys of one kind of link (`prefix` "": the data nodes, "sentinel_": the Sentinels),
// named after Redis's own tls-* settings.
std::vector<KeySpec<Rc>> redis_tls_keys(const std::string& prefix, RedisTls Rc::*which) {
  static std::deque<std::string> names; // KeySpec holds views: the names must outlive it
  const auto name = [&](const char* base) -> std::string_view {
    return names.emplace_back(prefix + base);
  };
  const auto file = [&](const char* base, std::optional<std::string> RedisTls::*field,
                        const char* what) -> KeySpec<Rc> {
    return {name(base),
            [which, field, what](Rc& c, const toml::node& n, Errors& e, const std::string& key) {
              want_tls_file(c, (c.*which).*field, what, n, e, key);
            }};
  };
  return {
      {name("tls"),
       [which](Rc& c, const toml::node& n, Errors& e, const std::string& key) {
         if (auto v = want_bool(n, e, key)) {
           (c.*which).enabled = *v;
         }
       }},
      file("tls_ca_cert_file", &RedisTls::ca_cert_file, "CA bundle"),
      file("tls_cert_file", &RedisTls::cert_file, "client certificate"),
      file("tls_key_file", &RedisTls::key_file, nullptr),
      {name("tls_server_name"),
       [which](Rc& c, const toml::node& n, Errors& e, const std::string& key) {
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

const std::vector<KeySpec<Rc>>& redis_keys() {
  static const std::vector<KeySpec<Rc>> all = [] {
    std::vector<KeySpec<Rc>> v = {
        read_elsewhere<Rc>("engine"),
        {"sentinels", read_sentinels},
        store("master_name", &Rc::master_name, want_string),
        store("user", &Rc::user, want_string),
        secret_file("password_file", &Rc::password),
        store("sentinel_user", &Rc::sentinel_user, want_string),
        secret_file("sentinel_password_file", &Rc::sentinel_password),
        store("operator_user", &Rc::operator_user, want_string),
        store("operator_password_file", &Rc::operator_password_file, want_string),
        store("require_tls", &Rc::require_tls, want_bool),
        store("write_probe", &Rc::write_probe, want_bool),
    };
    for (auto& spec : redis_tls_keys("", &Rc::tls)) {
      v.push_back(std::move(spec));
    }
    for (auto& spec : redis_tls_keys("sentinel_", &Rc::sentinel_tls)) {
      v.push_back(std::move(spec));
    }
    return v;
  }();
  return all;
}

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

// The TLS settings of a Redis cluster taken together: files only with tls = true, a client
// certificate with its key, and no plain-text link under require_tls.
void check_redis_tls(const toml::table& t, const Rc& c, const std::string& sec,
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

// What a man in the middle could do to a PostgreSQL cluster's writer: an error under
// require_tls, else a warning once a writer backend uses the cluster (see parse_config).
void check_pg_exposure(const Pg& c, const std::string& sec, const toml::source_region& where,
                       Errors& e) {
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
      e.warn(c.name, where, key, why + " (require_tls = true makes this an error)");
    }
  }
}

void parse_postgres(const std::string& name, const toml::table& t, const toml::source_region& where,
                    Config& cfg, Errors& e) {
  const std::string sec = "cluster." + name;
  Pg c;
  c.name = name;
  apply_keys(t, postgres_keys(), sec, c, e);
  require_keys(t, {"patroni", "dbname", "user"}, sec, where, e);
  if (c.sslmode.rfind("verify-", 0) == 0 && !c.sslrootcert) {
    e.add(where, sec + ".sslmode",
          util::format("\"{}\" needs sslrootcert (the CA that signed the servers' certificates)",
                       c.sslmode));
  }
  check_pg_exposure(c, sec, where, e);
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
}

void parse_redis(const std::string& name, const toml::table& t, const toml::source_region& where,
                 Config& cfg, Errors& e) {
  const std::string sec = "cluster." + name;
  Rc c;
  c.name = name;
  apply_keys(t, redis_keys(), sec, c, e, redis_refused);
  require_keys(t, {"sentinels", "master_name"}, sec, where, e);
  if (c.sentinel_user && !t.contains("sentinel_password_file")) {
    e.add(where, sec + ".sentinel_user", "needs sentinel_password_file as well");
  }
  check_redis_tls(t, c, sec, where, e);
  cfg.clusters.emplace(name, std::move(c));
}

// One engine a [cluster.NAME] may name: its `engine` value and how its table is read.
struct EngineSection {
  std::string_view name;
  void (*parse)(const std::string& name, const toml::table& t, const toml::source_region& where,
                Config& cfg, Errors& e);
};

// Every alternative of Cluster, by the `engine` that names it.
constexpr std::array k_engines = {
    EngineSection{"postgres", parse_postgres},
    EngineSection{"redis", parse_redis},
};
static_assert(k_engines.size() == std::variant_size_v<Cluster>,
              "each alternative of config::Cluster needs its row in k_engines");

// The engines as a reader lists them: "postgres" or "redis".
std::string engine_names(std::string_view last_joint) {
  std::string out;
  for (std::size_t i = 0; i < k_engines.size(); ++i) {
    out += i == 0 ? "" : (i + 1 == k_engines.size() ? last_joint : std::string_view{", "});
    out += util::format("\"{}\"", k_engines[i].name);
  }
  return out;
}

} // namespace

void parse_cluster(const std::string& name, const toml::table& t, const toml::source_region& where,
                   Config& cfg, Errors& e) {
  const std::string sec = "cluster." + name;
  const toml::node* engine = t.get("engine");
  if (engine == nullptr) {
    e.add(where, sec, util::format("missing required key \"engine\" ({})", engine_names(" or ")));
    return;
  }
  const auto kind = want_string(*engine, e, sec + ".engine");
  if (!kind) {
    return;
  }
  const auto row = std::find_if(k_engines.begin(), k_engines.end(),
                                [&](const EngineSection& s) { return s.name == *kind; });
  if (row == k_engines.end()) {
    e.add(engine->source(), sec + ".engine",
          util::format("\"{}\" is not one of {}", *kind, engine_names(", ")));
    return;
  }
  row->parse(name, t, where, cfg, e);
}

} // namespace dbcheck::config
