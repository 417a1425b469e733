// [agent] and [log]: key tables of one-line rows, and the rules across the agent's keys.
#include "host_sections.hpp"

#include <util/cidr.hpp>

namespace dbcheck::config {
namespace {

using A = AgentSettings;

// allow = [...]: the addresses or ranges that may ask the agent.
void read_allow(A& a, const toml::node& n, Errors& e, const std::string& key) {
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
}

// A connection limit from 1 to a million.
std::optional<std::size_t> want_connection_limit(const toml::node& n, Errors& e,
                                                 const std::string& key) {
  const auto v = n.value<int64_t>();
  if (!n.is_integer() || !v || *v < 1 || *v > 1'000'000) {
    e.add(n.source(), key, "expected a whole number from 1 to 1000000");
    return std::nullopt;
  }
  return static_cast<std::size_t>(*v);
}

const std::vector<KeySpec<A>>& agent_keys() {
  static const std::vector<KeySpec<A>> k = {
      store("listen", &A::listen, want_host_port),
      store("http_listen", &A::http_listen, want_host_port),
      store("interval", &A::interval, want_duration),
      store("fastinter", &A::fastinter, want_duration),
      store("fall", &A::fall, want_count),
      store("rise", &A::rise, want_count),
      store("lag_window", &A::lag_window, want_duration),
      store("stale_after", &A::stale_after, want_duration),
      store("shutdown_grace", &A::shutdown_grace, want_duration),
      store("ready_window", &A::ready_window, want_duration),
      store("drain_file", &A::drain_file, want_string),
      store("state_dir", &A::state_dir, want_string),
      store("default_backend", &A::default_backend, want_string),
      store("max_connections", &A::max_connections, want_connection_limit),
      {"allow", read_allow},
      store("expose_reasons", &A::expose_reasons, want_bool),
      store("http_certfile", &A::http_certfile, want_string),
      store("http_keyfile", &A::http_keyfile, want_string),
      read_elsewhere<A>("local"), // [agent.local], a table of its own
  };
  return k;
}

const std::vector<KeySpec<LogSettings>>& log_keys() {
  using L = LogSettings;
  static const std::vector<KeySpec<L>> k = {
      store("passes", &L::passes,
            [](const toml::node& n, Errors& e,
               const std::string& key) -> std::optional<core::PassLogging> {
              if (auto v = want_one_of(n, e, key, {"changes", "all"})) {
                return *v == "all" ? core::PassLogging::all : core::PassLogging::changes;
              }
              return std::nullopt;
            }),
      store("pass_heartbeat", &L::pass_heartbeat, want_duration),
      store("state_dir", &L::state_dir, want_absolute_path),
  };
  return k;
}

// [agent.local]: cluster = "host:port" of this host's node.
void read_local(const toml::node& local, A& a, Errors& e) {
  const toml::table* lt = local.as_table();
  if (lt == nullptr) {
    e.add(local.source(), "agent.local",
          "expected a table [agent.local] of cluster = \"host:port\"");
    return;
  }
  for (auto&& [k, v] : *lt) {
    const std::string key = util::format("agent.local.{}", k.str());
    if (auto hp = want_host_port(v, e, key)) {
      a.local.emplace(std::string{k.str()}, *hp);
    }
  }
}

// The rules across the agent's keys, with the defaults that follow other keys.
void check_agent(const toml::table& t, const toml::source_region& where, A& a, Errors& e) {
  // Where the agent listens and who may ask it are stated, never defaulted: its answers can take
  // every server of the host down.
  for (const auto& [key, example] :
       {std::pair{"listen", "\"10.0.0.1:5555\" (this host's address on HAProxy's network)"},
        std::pair{"http_listen", "\"10.0.0.1:8091\""},
        std::pair{"allow", "[\"10.0.0.10\", \"10.0.0.11\"] (the HAProxy hosts)"}}) {
    if (t.get(key) == nullptr) {
      e.add(where, util::format("agent.{}", key), util::format("is required, e.g. {}", example));
    }
  }
  if (a.http_certfile.has_value() != a.http_keyfile.has_value()) {
    e.add(where, a.http_certfile ? "agent.http_keyfile" : "agent.http_certfile",
          "agent.http_certfile and agent.http_keyfile go together (HTTPS needs both)");
  }
  if (t.get("fastinter") == nullptr) {
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
}

} // namespace

void parse_agent(const toml::node& node, const toml::source_region& where, Config& cfg, Errors& e) {
  const toml::table* t = node.as_table();
  if (t == nullptr) {
    e.add(where, "agent", "expected a table [agent]");
    return;
  }
  A a;
  apply_keys(*t, agent_keys(), "agent", a, e);
  if (const toml::node* local = t->get("local")) {
    read_local(*local, a, e);
  }
  check_agent(*t, where, a, e);
  cfg.agent = std::move(a);
}

void parse_log(const toml::node& node, const toml::source_region& where, Config& cfg, Errors& e) {
  if (const toml::table* t = node.as_table()) {
    apply_keys(*t, log_keys(), "log", cfg.log, e);
  } else {
    e.add(where, "log", "expected a table [log]");
  }
}

} // namespace dbcheck::config
