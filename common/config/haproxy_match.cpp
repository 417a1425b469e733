#include "haproxy_match.hpp"

#include <util/format.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace dbcheck::config {
namespace {

// True when the backend's external check is dbcheck, wherever it is installed or built, or a
// wrapper named after it (the one way to give it --config: HAProxy passes no arguments).
bool runs_dbcheck(const HaproxyBackend& b) {
  if (!b.external_check || b.command.empty()) {
    return false;
  }
  const auto slash = b.command.rfind('/');
  const std::string file = b.command.substr(slash == std::string::npos ? 0 : slash + 1);
  return file.rfind("dbcheck", 0) == 0 && file != "dbcheck-agent";
}

// `text` without the blanks and line ends around it (agent-send usually ends in "\n").
std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) {
    return "";
  }
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// Edits (insert, delete, replace, swap of neighbours) from `a` to `b`: how typos look.
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) {
    d[i][0] = i;
  }
  for (std::size_t j = 0; j <= b.size(); ++j) {
    d[0][j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// Names longer than this get no "did you mean": no backend name is, and distance() costs
// the product of the lengths (a hostile multi-megabyte agent-send would exhaust memory).
constexpr std::size_t k_max_hint_name = 128;

// The candidate nearest to `name` when it is near enough to be a typo of it, with its line.
std::optional<std::pair<std::string, int>>
nearest(const std::string& name, const std::vector<std::pair<std::string, int>>& candidates) {
  std::optional<std::pair<std::string, int>> best;
  std::size_t best_d = 0;
  if (name.size() > k_max_hint_name) {
    return best;
  }
  for (const auto& c : candidates) {
    if (c.first.size() > k_max_hint_name) {
      continue;
    }
    const std::size_t d = distance(name, c.first);
    const bool near = d <= 2 || d * 3 <= std::max(name.size(), c.first.size());
    if (near && (!best || d < best_d)) {
      best = c;
      best_d = d;
    }
  }
  return best;
}

// "file:line" where the line is known, else "file".
std::string at(const std::string& file, int line) {
  return line > 0 ? util::format("{}:{}", file, line) : file;
}

// How HAProxy came to its kill time for `s`, and the line that set it.
std::pair<std::string, int> kill_time_origin(const HaproxyBackend& b, const HaproxyServer& s,
                                             const std::string& hp) {
  const std::string inter = util::format("inter {}{}", util::format_duration(s.inter),
                                         s.inter_line == 0 ? ", HAProxy's default" : "");
  if (b.timeout_check && b.timeout_connect) {
    const int line = *b.timeout_connect < s.inter ? b.timeout_connect_line : s.inter_line;
    return {util::format("min({}, timeout connect {}), as `timeout check` is set at {}", inter,
                         util::format_duration(*b.timeout_connect), at(hp, b.timeout_check_line)),
            line};
  }
  return {inter, s.inter_line};
}

} // namespace

util::Duration external_check_kill_time(const HaproxyBackend& b, const HaproxyServer& s) {
  // `timeout check` is only a switch for external checks (HAProxy's process_chk_proc).
  if (b.timeout_check && b.timeout_connect) {
    return std::min(s.inter, *b.timeout_connect);
  }
  return s.inter;
}

std::vector<DbcheckServer> dbcheck_servers(const Config& cfg, const HaproxyServers& h) {
  std::map<std::string, const HaproxyBackend*> sections;
  for (const auto& b : h.backends) {
    sections.emplace(b.name, &b);
  }
  std::vector<DbcheckServer> out;
  for (const auto& s : h.servers) {
    const auto b = sections.find(s.backend);
    if (b == sections.end() || !s.checked) {
      continue;
    }
    if (runs_dbcheck(*b->second)) {
      out.push_back({&s, b->second, CheckKind::external, s.backend});
    } else if (s.agent_check) {
      const std::string sent = s.agent_send ? trimmed(*s.agent_send) : "";
      const std::string asks =
          sent.empty() && cfg.agent ? cfg.agent->default_backend.value_or("") : sent;
      if (cfg.agent || (!asks.empty() && cfg.backends.count(asks) != 0)) {
        out.push_back({&s, b->second, CheckKind::agent, asks});
      }
    }
  }
  return out;
}

std::vector<std::string> compare_with_haproxy(const Config& cfg, const HaproxyServers& h,
                                              const std::string& hp) {
  const std::string& toml = cfg.path;
  std::vector<std::string> out;
  const std::vector<DbcheckServer> servers = dbcheck_servers(cfg, h);
  std::set<std::string> asked;
  for (const auto& d : servers) {
    asked.insert(d.asks);
  }
  std::vector<std::pair<std::string, int>> unasked_toml; // [backend.NAME]s, for hints
  for (const auto& [name, b] : cfg.backends) {
    if (asked.count(name) == 0) {
      unasked_toml.emplace_back(name, b.line);
    }
  }
  std::vector<std::pair<std::string, int>> unknown_asked; // names HAProxy asks that toml lacks
  auto hint_toml = [&](const std::string& name) {
    const auto n = nearest(name, unasked_toml);
    return n ? util::format(" (did you mean {}, {}?)", n->first, at(toml, n->second)) : "";
  };

  // HAProxy's side, in file order: each backend section that runs dbcheck once.
  for (const auto& b : h.backends) {
    if (!runs_dbcheck(b)) {
      continue;
    }
    for (const auto& s : h.servers) {
      if (s.backend == b.name && !s.checked) {
        out.push_back(util::format("{}: server {}/{} has no `check`: HAProxy never runs dbcheck "
                                   "for it and keeps it UP whatever its role",
                                   at(hp, s.line), b.name, s.name));
      }
    }
    const auto found = cfg.backends.find(b.name);
    if (found == cfg.backends.end()) {
      unknown_asked.emplace_back(b.name, b.line);
      out.push_back(util::format(
          "{}: backend {} runs dbcheck (external-check command {}, line {}) but {} has no "
          "[backend.{}]{}: every check of it fails as a configuration error",
          at(hp, b.line), b.name, b.command, b.command_line, toml, b.name, hint_toml(b.name)));
      continue;
    }
    const Backend& mine = found->second;
    // The server HAProxy gives the least time decides (one finding per backend).
    const HaproxyServer* tightest = nullptr;
    for (const auto& d : servers) {
      if (d.backend == &b && (tightest == nullptr || external_check_kill_time(b, *d.server) <
                                                         external_check_kill_time(b, *tightest))) {
        tightest = d.server;
      }
    }
    if (tightest == nullptr) {
      continue;
    }
    const util::Duration kill = external_check_kill_time(b, *tightest);
    if (mine.timeout >= kill) {
      const auto [why, line] = kill_time_origin(b, *tightest, hp);
      out.push_back(util::format(
          "{}: backend {}: HAProxy kills the check after {} ({}) but dbcheck's timeout is {} "
          "({}{}): a slow check is killed and counted failed without its reason; make timeout "
          "shorter than {}",
          at(hp, line > 0 ? line : b.line), b.name, util::format_duration(kill), why,
          util::format_duration(mine.timeout), at(toml, mine.timeout_line),
          mine.timeout_line == 0 ? ", the default" : "", util::format_duration(kill)));
    }
    const auto c = cfg.clusters.find(mine.cluster);
    const auto* pg = c == cfg.clusters.end() ? nullptr : std::get_if<PostgresCluster>(&c->second);
    // "auto" (none) follows the checks' own cadence, so it is always below inter.
    if (pg != nullptr && pg->shared_view_max_age && *pg->shared_view_max_age > tightest->inter) {
      out.push_back(util::format(
          "{}: cluster.{}.shared_view_max_age {} is longer than inter {} of backend {} ({}): a "
          "check could reuse the members' view of an earlier round of checks, and a new leader "
          "would be seen that much later; keep it at most inter, or \"auto\"",
          at(toml, pg->shared_view_max_age_line), pg->name,
          util::format_duration(*pg->shared_view_max_age), util::format_duration(tightest->inter),
          b.name, at(hp, tightest->inter_line > 0 ? tightest->inter_line : b.line)));
    }
  }

  // The agent's servers: one finding per backend section and name asked.
  std::set<std::pair<const HaproxyBackend*, std::string>> told;
  for (const auto& d : servers) {
    if (d.kind != CheckKind::agent || cfg.backends.count(d.asks) != 0 ||
        !told.insert({d.backend, d.asks}).second) {
      continue;
    }
    if (d.asks.empty()) {
      out.push_back(
          util::format("{}: server {}/{} has agent-check without agent-send, and {} has no "
                       "agent.default_backend: dbcheck-agent answers it down",
                       at(hp, d.server->line), d.backend->name, d.server->name, toml));
      continue;
    }
    unknown_asked.emplace_back(d.asks, d.server->line);
    out.push_back(util::format("{}: server {}/{} asks dbcheck-agent for {} (agent-send{}) but {} "
                               "has no [backend.{}]{}: the agent answers it down",
                               at(hp, d.server->line), d.backend->name, d.server->name, d.asks,
                               d.server->agent_send ? "" : " absent: agent.default_backend", toml,
                               d.asks, hint_toml(d.asks)));
  }

  // dbcheck's side: each [backend.NAME] some HAProxy server must ask for.
  std::map<std::string, const HaproxyBackend*> sections;
  for (const auto& b : h.backends) {
    sections.emplace(b.name, &b);
  }
  for (const auto& [name, b] : cfg.backends) {
    if (asked.count(name) != 0) {
      continue;
    }
    const auto same = sections.find(name);
    const auto other = std::find_if(servers.begin(), servers.end(), [&](const DbcheckServer& d) {
      return same != sections.end() && d.backend == same->second;
    });
    if (other != servers.end()) {
      out.push_back(
          util::format("{}: [backend.{}]: no server asks for it, but HAProxy's backend {} "
                       "({}) asks for {}",
                       at(toml, b.line), name, name, at(hp, same->second->line),
                       other->asks.empty() ? "nothing" : other->asks));
      continue;
    }
    if (same != sections.end()) {
      out.push_back(util::format(
          "{}: [backend.{}]: HAProxy's backend {} ({}) does not run dbcheck (it needs `option "
          "external-check` and `external-check command` naming dbcheck{}, and `check` on its "
          "servers)",
          at(toml, b.line), name, name, at(hp, same->second->line),
          cfg.agent ? ", or agent-check with agent-send" : ""));
      continue;
    }
    const auto n = nearest(name, unknown_asked);
    out.push_back(util::format(
        "{}: [backend.{}] is used by no HAProxy backend in {}{}", at(toml, b.line), name, hp,
        n ? util::format(" (did you mean {}, {}?)", n->first, at(hp, n->second)) : ""));
  }
  return out;
}

} // namespace dbcheck::config
