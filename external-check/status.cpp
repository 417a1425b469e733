// `dbcheck status`: what every node says, what the manager says, and where HAProxy may send
// writes and reads, for each cluster, in one screen (or redrawn each second with --watch).
#include "cli.hpp"
#include "commands.hpp"
#include "parallel_checks.hpp"
#include "status_table.hpp"
#include "terminal_hangup.hpp"

#include <config/haproxy_cfg.hpp>
#include <config/load_config.hpp>
#include <core/report.hpp>
#include <core/sentinel_replicas.hpp>
#include <probe/pg_check.hpp>
#include <probe/redis_check.hpp>
#include <util/format.hpp>

#include <fmt/chrono.h>

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <iostream>

namespace dbcheck::extcheck {
namespace {

// A node to show: its name, its address, the manager's word on it.
struct Node {
  std::string name;
  util::HostPort address;
  std::string manager;
  std::string timeline;      // Patroni's, or ""
  std::string manager_lag;   // Patroni's, in bytes, or ""
  bool named_writer = false; // the manager names it leader (master): it has no lag to show
};

// The backends of `cluster`, writers first, each group by name.
std::vector<std::string> backends_of(const config::Config& cfg, const std::string& cluster) {
  std::vector<std::string> out;
  for (const auto role : {config::Role::primary, config::Role::replica}) {
    for (const auto& [name, b] : cfg.backends) {
      if (b.cluster == cluster && b.role == role) {
        out.push_back(name);
      }
    }
  }
  return out;
}

// Adds `n` unless a node of that address is there already.
void add_node(std::vector<Node>& nodes, Node n) {
  for (const auto& have : nodes) {
    if (have.address == n.address) {
      return;
    }
  }
  nodes.push_back(std::move(n));
}

// HAProxy's name for the server at `addr` in one of `backends`, or "".
std::string haproxy_name(const config::HaproxyServers* haproxy,
                         const std::vector<std::string>& backends, const util::HostPort& addr) {
  if (haproxy == nullptr) {
    return "";
  }
  for (const auto& srv : haproxy->servers) {
    if (srv.port && srv.host == addr.host && *srv.port == addr.port &&
        std::find(backends.begin(), backends.end(), srv.backend) != backends.end()) {
      return srv.name;
    }
  }
  return "";
}

// The node's own answer as the check it passes heard it (the leader's from the writer check,
// a replica's from the reader check). When it passes none: as the check that failed for
// another cause than its role heard it (a primary whose writer check cannot read Patroni says
// "primary, read-write" there; a lagging replica's reader check says what its receiver does),
// a reader check first; else as a reader check heard it.
std::string own_answer(const core::Report* reports, std::size_t count) {
  const core::Report* shown = nullptr;
  int shown_rank = -1;
  for (const core::Report* r = reports; r != reports + count; ++r) {
    if (core::passes(r->verdict)) {
      return r->own;
    }
    const int rank =
        (r->verdict.failure != core::Failure::role ? 2 : 0) + (r->role == "replica" ? 1 : 0);
    if (rank > shown_rank) {
      shown = r;
      shown_rank = rank;
    }
  }
  return shown != nullptr ? shown->own : "";
}

// Patroni's members, as the manager of a PostgreSQL cluster lists them.
void gather_manager(const config::PostgresCluster& pg, const probe::Deadline& deadline,
                    const config::HaproxyServers* /*haproxy: Patroni names its members*/,
                    ClusterStatus& s, std::vector<Node>& nodes) {
  s.engine = "postgres";
  const auto view = probe::patroni_view(pg, deadline);
  if (view) {
    const auto* leader = core::find_leader(*view);
    s.manager = util::format("Patroni names {} leader{}", leader ? leader->name : "no member",
                             view->paused ? " (paused: no automatic failover)" : "");
    for (const auto& m : view->members) {
      add_node(nodes, {m.name, m.address, util::format("{} {}", m.role, m.state),
                       m.timeline ? std::to_string(*m.timeline) : "", m.lag,
                       core::is_leader_role(m.role)});
    }
  } else {
    s.manager = util::format("Patroni not read: {}", view.error().detail);
  }
}

// The Sentinels' answers, the master a majority names and the replicas they know.
void gather_manager(const config::RedisCluster& redis, const probe::Deadline& deadline,
                    const config::HaproxyServers* haproxy, ClusterStatus& s,
                    std::vector<Node>& nodes) {
  s.engine = "redis";
  const auto survey = probe::survey_sentinels(redis, deadline);
  const core::SentinelTally t = core::tally_sentinels(survey.answers, redis.sentinels.size());
  for (const auto& a : survey.answers) {
    SentinelRow row{util::to_string(a.sentinel), "", "", ""};
    if (!a.view) {
      row.names = core::no_answer(a.view.error().kind);
    } else {
      row.names = a.view->master ? util::to_string(*a.view->master) : "nil";
      row.flags = a.view->flags;
      row.epoch = a.view->config_epoch ? std::to_string(*a.view->config_epoch) : "";
    }
    s.sentinels.push_back(std::move(row));
  }
  if (t.majority) {
    s.manager = util::format("{} of {} Sentinels name {} master", t.majority_votes, t.configured,
                             util::to_string(*t.majority));
    add_node(nodes, {"master", *t.majority,
                     util::format("master {}/{}", t.majority_votes, t.configured), "", "", true});
  } else {
    s.manager = util::format("no Sentinel majority ({} needed): {}", t.needed, t.detail);
  }
  // The replicas, where reads go: named as HAProxy names them, else by their place.
  const core::KnownReplicas known = core::merge_replica_listings(survey.listings);
  for (std::size_t i = 0; i < known.replicas.size(); ++i) {
    const auto& r = known.replicas[i];
    std::string shown = haproxy_name(haproxy, s.backends, r.addr);
    if (shown.empty()) {
      shown = known.replicas.size() == 1 ? "replica" : util::format("replica-{}", i + 1);
    }
    add_node(nodes, {std::move(shown), r.addr,
                     core::replica_manager_words(r, redis.sentinels.size()), "", "", false});
  }
  if (!known.note.empty()) {
    s.notes.push_back(known.note);
  }
}

// One cluster's screen: the manager asked, then every node checked for every backend, all in
// parallel, each check within its backend's timeout.
ClusterStatus gather(const config::Config& cfg, const std::string& name,
                     const config::HaproxyServers* haproxy, const std::string& haproxy_cfg) {
  const config::Cluster& cluster = cfg.clusters.at(name);
  ClusterStatus s;
  s.name = name;
  s.backends = backends_of(cfg, name);
  std::vector<Node> nodes;
  // The manager is asked within the longest timeout of the cluster's backends.
  util::Duration timeout{800};
  for (const auto& b : s.backends) {
    timeout = std::max(timeout, cfg.backends.at(b).timeout);
  }
  const auto deadline = probe::Deadline::in(timeout);
  std::visit(
      config::Overloaded{
          [&](const config::PostgresCluster& c) { gather_manager(c, deadline, haproxy, s, nodes); },
          [&](const config::RedisCluster& c) { gather_manager(c, deadline, haproxy, s, nodes); },
      },
      cluster);
  // HAProxy's servers of these backends: where it may send traffic, by its own names. Decided
  // before they are added: a server is "not in Patroni" only when Patroni listed its members.
  const bool patroni_listed = s.engine == "postgres" && !nodes.empty();
  if (haproxy != nullptr) {
    for (const auto& srv : haproxy->servers) {
      if (srv.port &&
          std::find(s.backends.begin(), s.backends.end(), srv.backend) != s.backends.end()) {
        add_node(nodes, {srv.name,
                         {srv.host, *srv.port},
                         patroni_listed ? "not in Patroni" : "",
                         "",
                         "",
                         false});
      }
    }
  } else {
    s.notes.push_back(
        util::format("{} not read: only the nodes the manager names are shown", haproxy_cfg));
  }
  // Every node for every backend, at once.
  std::vector<CheckJob> jobs;
  for (const auto& node : nodes) {
    for (const auto& b : s.backends) {
      jobs.push_back({&cluster, &cfg.backends.at(b), node.address});
    }
  }
  const std::vector<core::Report> all = run_checks(jobs, probe::Clock::now());
  std::size_t readers = 0;
  for (const auto& backend_name : s.backends) {
    readers += cfg.backends.at(backend_name).role == config::Role::replica ? 1 : 0;
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    StatusNode n;
    n.name = nodes[i].name;
    n.address = util::to_string(nodes[i].address);
    n.manager = nodes[i].manager;
    n.timeline = nodes[i].timeline;
    n.manager_lag = nodes[i].manager_lag;
    for (std::size_t b = 0; b < s.backends.size(); ++b) {
      const core::Report& r = all[i * s.backends.size() + b];
      n.cells.push_back({s.backends[b], core::passes(r.verdict),
                         std::string{core::to_string(r.verdict.failure)}, r.verdict.reason});
      if (!r.lag || nodes[i].named_writer) {
        continue;
      }
      // Several reader backends: the loosest bound is shown (unknown the loosest of all),
      // with the backend that found it.
      const bool looser =
          n.lag_derivation.empty() || (n.lag_s && (!r.lag->seconds || *r.lag->seconds > *n.lag_s));
      if (looser) {
        n.lag_s = r.lag->seconds;
        n.lag_derivation = readers > 1 ? util::format("{} ({})", r.lag->derivation, s.backends[b])
                                       : r.lag->derivation;
      }
    }
    // data(): a cluster no backend uses has no reports, and all[0] would not exist.
    n.own = own_answer(all.data() + i * s.backends.size(), s.backends.size());
    s.nodes.push_back(std::move(n));
  }
  if (nodes.empty()) {
    s.notes.push_back("no node to check: the manager named none and HAProxy lists none");
  }
  return s;
}

// The terminal's width when stdout is one, else `fallback`.
std::size_t terminal_width(std::size_t fallback) {
  winsize ws{};
  if (::isatty(STDOUT_FILENO) != 0 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 &&
      ws.ws_col > 0) {
    return ws.ws_col;
  }
  return fallback;
}

} // namespace

int status_command(const std::string& path, const std::string& cluster_name,
                   const std::string& haproxy_cfg, bool json, bool watch) {
  auto cfg = config::all_readable(config::load_config(path));
  if (!cfg) {
    for (const auto& m : cfg.error().messages) {
      std::cerr << "dbcheck: configuration error: " << m << '\n';
    }
    return k_exit_config;
  }
  std::vector<std::string> names;
  for (const auto& [name, _] : cfg->clusters) {
    if (cluster_name.empty() || name == cluster_name) {
      names.push_back(name);
    }
  }
  if (names.empty()) {
    std::cerr << util::format("dbcheck: {}: no [cluster.{}]\n", path, cluster_name);
    return k_exit_config;
  }
  if (watch) {
    // Its terminal gone (a dropped SSH session, a closed window), a watch ends as watch(1) does.
    end_on_hangup();
  }
  std::vector<ClusterStatus> previous;
  for (bool first = true;; first = false) {
    const auto round_start = std::chrono::steady_clock::now();
    // Re-read each round: HAProxy's servers may change while an operator watches.
    const auto haproxy = config::load_haproxy_cfg(haproxy_cfg);
    std::vector<ClusterStatus> now;
    for (const auto& name : names) {
      now.push_back(gather(*cfg, name, haproxy ? &*haproxy : nullptr, haproxy_cfg));
    }
    if (json) {
      std::cout << render_status_json(now) << std::flush;
    } else if (watch) {
      // Home and clear, then the screen: redrawn in place, what changed marked '*'.
      const std::time_t t = std::time(nullptr);
      std::tm utc{};
      gmtime_r(&t, &utc);
      std::cout << "\033[H\033[2J"
                << util::format("dbcheck status, every 1s ({:%H:%M:%S} UTC); '*': changed\n\n", utc)
                << render_status_text(now, first ? nullptr : &previous, terminal_width(80))
                << std::flush;
    } else {
      std::cout << render_status_text(now, nullptr, terminal_width(0)) << std::flush;
    }
    if (!watch) {
      return std::cout ? k_exit_pass : k_exit_fail;
    }
    // No SIGHUP may come: a hangup signals only the session's leader, and runuser or sudo
    // leading it keep theirs. Then only the output tells: EIO or a hung-up terminal, EPIPE or
    // a pipe with no reader.
    if (!std::cout || hung_up_before(STDOUT_FILENO, round_start + std::chrono::seconds{1})) {
      std::cerr << "dbcheck: status --watch: the output is gone (terminal closed?): ending\n";
      return k_exit_hangup;
    }
    previous = std::move(now);
  }
}

} // namespace dbcheck::extcheck
