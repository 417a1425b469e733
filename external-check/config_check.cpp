// `dbcheck config-check`: the configuration file alone, or against HAProxy's (whose backend
// names, check kill time and inter it must agree with), and with --live one check of each
// server HAProxy asks dbcheck about.
#include "cli.hpp"
#include "commands.hpp"
#include "parallel_checks.hpp"

#include <config/haproxy_match.hpp>
#include <config/load_config.hpp>
#include <core/disk_space.hpp>
#include <core/report.hpp>
#include <util/format.hpp>

#include <algorithm>
#include <array>
#include <iostream>
#include <map>
#include <variant>

namespace dbcheck::extcheck {
namespace {

// One row of the --live table.
struct LiveRow {
  std::string backend;
  std::string server;
  std::string address;
  std::string check;   // "external" or "agent"
  std::string asks;    // the [backend.NAME] judged by
  std::string verdict; // "UP", "DOWN", or "-" when not checked
  std::string reason;
};

// Left-aligned columns, the last one free: what a terminal at 3 a.m. can read.
void print_table(const std::vector<LiveRow>& rows) {
  std::vector<std::array<std::string, 6>> cells = {
      {"BACKEND", "SERVER", "ADDRESS", "CHECK", "VERDICT", "REASON"}};
  for (const auto& r : rows) {
    const std::string check = r.check == "agent" ? util::format("agent:{}", r.asks) : r.check;
    cells.push_back({r.backend, r.server, r.address, check, r.verdict, r.reason});
  }
  std::array<std::size_t, 5> width{};
  for (const auto& c : cells) {
    for (std::size_t i = 0; i < width.size(); ++i) {
      width[i] = std::max(width[i], c[i].size());
    }
  }
  for (const auto& c : cells) {
    std::string line;
    for (std::size_t i = 0; i < width.size(); ++i) {
      line += util::format("{:<{}}  ", c[i], width[i]);
    }
    std::cout << line << c[5] << '\n';
  }
}

// Checks each server of `servers` whose [backend.NAME] exists, all at once, and prints the table
// and, per writer backend, how many servers pass (none: where the writes would go nowhere).
void live(const config::Config& cfg, const std::vector<config::DbcheckServer>& servers) {
  std::vector<LiveRow> rows;
  std::vector<CheckJob> jobs;
  std::vector<std::size_t> row_of_job;
  for (const auto& d : servers) {
    const auto& s = *d.server;
    LiveRow row{s.backend,
                s.name,
                s.port ? util::format("{}:{}", s.host, *s.port) : s.host,
                d.kind == config::CheckKind::agent ? "agent" : "external",
                d.asks,
                "-",
                ""};
    const auto b = cfg.backends.find(d.asks);
    if (b == cfg.backends.end()) {
      row.reason = "not checked: no such [backend.NAME] (see above)";
    } else if (!s.port) {
      row.reason = "not checked: no port in HAProxy's address";
    } else {
      row_of_job.push_back(rows.size());
      jobs.push_back({&cfg.clusters.at(b->second.cluster), &b->second, {s.host, *s.port}});
    }
    rows.push_back(std::move(row));
  }
  const auto reports = run_checks(jobs, probe::Clock::now());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    LiveRow& row = rows[row_of_job[j]];
    row.verdict = core::passes(reports[j].verdict) ? "UP" : "DOWN";
    row.reason = reports[j].verdict.reason;
  }
  print_table(rows);
  // Writers: exactly one should pass. None passing while the cluster has a leader is what a
  // server address spelled otherwise than the manager announces it looks like.
  std::map<std::string, std::pair<int, int>> writers; // HAProxy backend -> (passing, checked)
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].backend->role == config::Role::primary) {
      auto& [up, all] = writers[rows[row_of_job[j]].backend];
      up += core::passes(reports[j].verdict) ? 1 : 0;
      ++all;
    }
  }
  for (const auto& [name, counts] : writers) {
    std::cout << util::format(
        "{}: {} of {} servers pass as writer{}\n", name, counts.first, counts.second,
        counts.first == 0 ? " -- writes have nowhere to go. If the manager names a leader, "
                            "compare its address with HAProxy's server lines (dbcheck status "
                            "shows both)"
                          : "");
  }
}

// What dbcheck-agent measures of a PostgreSQL node's disks, in a few words.
std::string disk_words(const config::PostgresCluster& c) {
  if (!c.data_directory) {
    return "free space not measured (no data_directory)";
  }
  return util::format("dbcheck-agent measures free space of {} and its pg_wal (min_free_space "
                      "{}, min_free_inodes {})",
                      *c.data_directory, core::to_string(c.disk.min_free_space),
                      c.disk.min_free_inodes);
}

} // namespace

int config_check(const std::string& path, const std::string& haproxy_cfg, bool live_checks) {
  auto cfg = config::all_readable(config::load_config(path));
  if (!cfg) {
    for (const auto& m : cfg.error().messages) {
      std::cerr << "configuration error: " << m << '\n';
    }
    return k_exit_config;
  }
  std::cout << util::format("{}: OK, {} cluster(s), {} backend(s)\n", path, cfg->clusters.size(),
                            cfg->backends.size());
  for (const auto& w : cfg->warnings) {
    std::cerr << "warning: " << w << '\n';
  }
  for (const auto& [name, b] : cfg->backends) {
    std::cout << util::format(
        "  backend {}: cluster {}, role {}, timeout {}{}{}\n", name, b.cluster,
        config::to_string(b.role), util::format_duration(b.timeout),
        b.role == config::Role::replica ? ", max_lag " + util::format_duration(b.max_lag) : "",
        b.max_latency ? ", max_latency " + util::format_duration(*b.max_latency) : "");
  }
  for (const auto& [name, cluster] : cfg->clusters) {
    if (const auto* pg = std::get_if<config::PostgresCluster>(&cluster)) {
      std::cout << util::format("  cluster {}: {}; write probe {}\n", name, disk_words(*pg),
                                pg->write_probe ? "on (writer checks extend a table, rolled back)"
                                                : "off");
    }
  }
  if (haproxy_cfg.empty()) {
    return k_exit_pass;
  }
  const auto h = config::load_haproxy_cfg(haproxy_cfg);
  if (!h) {
    std::cerr << "configuration error: " << h.error() << '\n';
    return k_exit_config;
  }
  for (const auto& s : h->skipped) {
    std::cerr << "note: not compared: " << s << '\n';
  }
  const auto servers = config::dbcheck_servers(*cfg, *h);
  const auto findings = config::compare_with_haproxy(*cfg, *h, haproxy_cfg);
  for (const auto& f : findings) {
    std::cout << f << '\n';
  }
  if (findings.empty()) {
    std::cout << util::format("{}: consistent with {}, {} server(s) checked by dbcheck\n",
                              haproxy_cfg, path, servers.size());
  } else {
    std::cout << util::format("{}: {} mismatch(es) with {}\n", haproxy_cfg, findings.size(), path);
  }
  if (live_checks) {
    live(*cfg, servers);
  }
  return findings.empty() ? k_exit_pass : k_exit_config;
}

} // namespace dbcheck::extcheck
