#include "cli.hpp"

#include "completion.hpp"
#include "invocation.hpp"
#include "process_setup.hpp"
#include "setup_files.hpp"
#include "syslog_line.hpp"

#include <config/load_config.hpp>
#include <core/report.hpp>
#include <probe/library_versions.hpp>
#include <probe/run_check.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <syslog.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <switchover/switchover.hpp>

extern char** environ;

namespace dbcheck::extcheck {
namespace {

// Where a run's single reason line goes.
enum class Output { haproxy, terminal };

void log_line(Output out, int priority, const std::string& line) {
  if (out == Output::haproxy) {
    // HAProxy never reads our output; the line belongs in syslog, and on a terminal too.
    send_syslog(priority, line);
    if (::isatty(STDERR_FILENO) != 0) {
      std::cerr << line << '\n';
    }
  } else {
    std::cerr << line << '\n';
  }
}

// Loads the config; `whole`: every cluster's password files must be readable too (else a
// cluster whose files cannot be read fails only its own checks, see unreadable()).
tl::expected<config::Config, int> load(const std::string& path, Output out, bool whole = false) {
  auto cfg = whole ? config::all_readable(config::load_config(path)) : config::load_config(path);
  if (!cfg) {
    for (const auto& m : cfg.error().messages) {
      log_line(out, LOG_ERR, fmt::format("configuration error: {}", m));
    }
    return tl::make_unexpected(k_exit_config);
  }
  return std::move(*cfg);
}

// True, after logging why, when `cluster`'s password files could not be read.
bool unreadable(const config::Config& cfg, const std::string& cluster, Output out) {
  const auto it = cfg.unreadable.find(cluster);
  if (it == cfg.unreadable.end()) {
    return false;
  }
  for (const auto& m : it->second) {
    log_line(out, LOG_ERR, fmt::format("configuration error: {}", m));
  }
  return true;
}

// Loads the config and checks `target`; on a config problem logs it and returns exit code 2.
tl::expected<core::Report, int> check(const std::string& path, const Target& target, Output out,
                                      probe::Clock::time_point started) {
  auto cfg = load(path, out);
  if (!cfg) {
    return tl::make_unexpected(cfg.error());
  }
  const auto b = cfg->backends.find(target.backend);
  if (b == cfg->backends.end()) {
    std::string known;
    for (const auto& [name, _] : cfg->backends) {
      known += known.empty() ? name : ", " + name;
    }
    log_line(out, LOG_ERR,
             fmt::format("configuration error: {}: no [backend.{}] (HAProxy backend names must "
                         "match; known: {})",
                         path, target.backend, known));
    return tl::make_unexpected(k_exit_config);
  }
  if (unreadable(*cfg, b->second.cluster, out)) {
    return tl::make_unexpected(k_exit_config);
  }
  const config::Cluster& cluster = cfg->clusters.at(b->second.cluster);
  return probe::run_check(cluster, b->second, target.node, started);
}

int exit_code(const core::Report& r) {
  return core::passes(r.verdict) ? k_exit_pass : k_exit_fail;
}

// Exit status of a switchover that did not succeed: the state the operator must act on
// first (left paused, interrupted), else the phase it failed in (3 preflight ... 8 unpause).
int switchover_exit(const switchover::SwitchoverResult& r) {
  if (r.left_paused) {
    return k_exit_left_paused;
  }
  if (r.interrupted_by) {
    return k_exit_interrupted;
  }
  switch (*r.failed) {
  case switchover::SwitchoverPhase::preflight:
    return k_exit_failed_preflight;
  case switchover::SwitchoverPhase::pause:
    return k_exit_failed_pause;
  case switchover::SwitchoverPhase::request:
    return k_exit_failed_request;
  case switchover::SwitchoverPhase::confirm:
    return k_exit_failed_confirm;
  case switchover::SwitchoverPhase::demote:
    return k_exit_failed_demote;
  case switchover::SwitchoverPhase::unpause:
    return k_exit_failed_unpause;
  }
  return k_exit_failed_preflight;
}

// `dbcheck switchover`: progress on stdout as it happens, a summary, an exit code per phase.
int switchover(const std::string& path, const std::string& cluster_name, const std::string& to,
               const std::string& timeout, const std::string& pause, bool dry_run) {
  // Before anything starts a thread: SIGINT/SIGTERM are then only taken between steps, and
  // run the release of the old master instead of killing the process half-way.
  block_stop_signals();
  auto cfg = load(path, Output::terminal);
  if (!cfg) {
    return cfg.error();
  }
  const auto it = cfg->clusters.find(cluster_name);
  if (it == cfg->clusters.end()) {
    std::cerr << fmt::format("dbcheck: {}: no [cluster.{}]\n", path, cluster_name);
    return k_exit_config;
  }
  if (unreadable(*cfg, cluster_name, Output::terminal)) {
    return k_exit_config;
  }
  switchover::SwitchoverOptions options;
  options.dry_run = dry_run;
  options.interrupted = take_stop_signal;
  auto parsed_timeout = util::parse_duration(timeout);
  if (!parsed_timeout) {
    std::cerr << fmt::format("dbcheck: --timeout {}: {}\n", timeout, parsed_timeout.error());
    return k_exit_config;
  }
  options.timeout = *parsed_timeout;
  if (!pause.empty()) {
    auto parsed_pause = util::parse_duration(pause);
    if (!parsed_pause) {
      std::cerr << fmt::format("dbcheck: --pause {}: {}\n", pause, parsed_pause.error());
      return k_exit_config;
    }
    const util::Duration least = switchover::minimum_pause(options.timeout);
    if (*parsed_pause < least) {
      std::cerr << fmt::format(
          "dbcheck: --pause {} is shorter than --timeout {} plus the {} margin for releasing "
          "the old master: the pause must outlive the switchover (give --pause {} or more, or "
          "leave it out)\n",
          pause, util::format_duration(options.timeout),
          util::format_duration(least - options.timeout), util::format_duration(least));
      return k_exit_config;
    }
    options.pause = *parsed_pause;
  }
  if (!to.empty()) {
    auto hp = util::parse_host_port(to);
    if (!hp) {
      std::cerr << fmt::format("dbcheck: --to {}: {}\n", to, hp.error());
      return k_exit_config;
    }
    options.to = *hp;
  }
  const auto progress = [](const switchover::SwitchoverEvent& e) {
    std::cout << fmt::format("[{:6.1f}s] {:<9} {}{}\n", e.elapsed_s, switchover::to_string(e.phase),
                             !e.finished ? "waiting for: "
                             : e.ok      ? "done: "
                                         : "FAILED: ",
                             e.text)
              << std::flush;
  };
  const switchover::SwitchoverResult r = switchover::run_switchover(it->second, options, progress);
  if (!r.plan.empty() && (dry_run || !r.ok)) {
    std::cout << (dry_run ? "plan (dry run, nothing changed):\n" : "the plan was:\n");
    for (std::size_t i = 0; i < r.plan.size(); ++i) {
      std::cout << fmt::format("  {}. {}\n", i + 1, r.plan[i]);
    }
  }
  std::string phases;
  for (const auto& p : r.phases) {
    phases += fmt::format("{}{} {:.1f}s", phases.empty() ? "" : ", ",
                          switchover::to_string(p.phase), p.seconds);
  }
  if (!r.ok) {
    if (!r.advice.empty()) {
      std::cout << fmt::format("{}: {}\n", r.left_paused ? "OPERATOR ACTION NEEDED" : "to do",
                               r.advice);
    }
    std::cout << fmt::format("switchover of {} {} in {} after {:.1f}s: {} ({})\n", cluster_name,
                             r.interrupted_by ? "INTERRUPTED" : "FAILED",
                             switchover::to_string(*r.failed), r.total_s, r.error, phases)
              << std::flush;
    return switchover_exit(r);
  }
  if (dry_run) {
    std::cout << fmt::format("dry run of {}: the cluster is ready ({})\n", cluster_name, phases);
  } else {
    std::cout << fmt::format("switchover of {}: {} -> {} in {:.1f}s ({})\n", cluster_name,
                             r.old_primary, r.new_primary, r.total_s, phases);
  }
  return k_exit_pass;
}

} // namespace

int run(int argc, char** argv) {
  // The check's time starts now: config loading and password files count against `timeout`.
  const auto started = probe::Clock::now();
  reopen_standard_fds();
  ignore_sigpipe();
  const Env env = env_from(environ);
  scrub_libpq_environment();

  CLI::App app{"dbcheck: HAProxy external check that passes a PostgreSQL writer only when\n"
               "Patroni and the node agree, and a reader only when its lag in seconds is low.\n"
               "HAProxy runs it as: dbcheck <proxy_addr> <proxy_port> <server_addr> "
               "<server_port>\n(backend from HAPROXY_PROXY_NAME). Exit 0 pass, 1 fail, 2 "
               "configuration error.",
               "dbcheck"};
  app.set_version_flag("--version", probe::version_banner("dbcheck"));
  std::optional<std::string> config_flag;
  app.add_option("--config", config_flag,
                 "configuration file (default: $DBCHECK_CONFIG, else /etc/dbcheck/dbcheck.toml)")
      ->type_name("FILE");
  std::vector<std::string> haproxy_args;
  app.add_option("haproxy_args", haproxy_args,
                 "as HAProxy passes them: proxy_addr proxy_port server_addr server_port");

  std::string backend;
  std::string node;
  auto* check_cmd = app.add_subcommand("check", "check one node once; print one line");
  check_cmd->add_option("backend", backend, "HAProxy backend name ([backend.NAME] in the config)")
      ->required();
  check_cmd->add_option("node", node, "the server as HOST:PORT, e.g. 10.0.0.1:5432")->required();
  check_cmd->fallthrough();

  bool json = false;
  auto* explain_cmd = app.add_subcommand(
      "explain", "check one node and show each opinion, its latency, the lag derivation and "
                 "the verdict");
  explain_cmd->add_option("backend", backend, "HAProxy backend name")->required();
  explain_cmd->add_option("node", node, "the server as HOST:PORT")->required();
  explain_cmd->add_flag("--json", json, "print the explanation as JSON");
  explain_cmd->fallthrough();

  auto* config_cmd =
      app.add_subcommand("config-check", "validate the configuration file and exit (0 or 2)");
  config_cmd->fallthrough();

  std::string setup_name;
  std::string setup_names;
  for (const auto& f : setup_files()) {
    setup_names += fmt::format("\n  {:<9} {}", f.name, f.source_path);
  }
  auto* setup_cmd = app.add_subcommand(
      "setup-sql", "print the least-privilege setup for the check user (the files dbcheck ships "
                   "and its tests use):" +
                       setup_names);
  setup_cmd->add_option("what", setup_name, "which file (listed above)")
      ->required()
      ->check(CLI::IsMember([] {
        std::vector<std::string> names;
        for (const auto& f : setup_files()) {
          names.emplace_back(f.name);
        }
        return names;
      }()));
  std::string sw_cluster;
  std::string sw_to;
  std::string sw_timeout = "60s";
  std::string sw_pause;
  bool sw_dry_run = false;
  auto* switchover_cmd = app.add_subcommand(
      "switchover",
      "planned switchover of a cluster that loses no acknowledged write (Redis: pause writes, "
      "SENTINEL FAILOVER, wait for agreement, unpause; PostgreSQL: Patroni's POST /switchover, "
      "wait for agreement). SIGINT/SIGTERM stop it and release the old master. Exit 0 done, 2 "
      "configuration, 3 preflight, 4 pause, 5 request, 6 confirm, 7 demote, 8 unpause failed, "
      "9 interrupted, 10 old master left paused (the output says what to do)");
  switchover_cmd->add_option("cluster", sw_cluster, "[cluster.NAME] in the configuration")
      ->required();
  switchover_cmd->add_option("--to", sw_to, "the replica to promote (HOST:PORT)");
  switchover_cmd->add_flag("--dry-run", sw_dry_run, "check the cluster and print the plan only");
  switchover_cmd->add_option("--timeout", sw_timeout, "for the whole switchover (default 60s)");
  switchover_cmd->add_option(
      "--pause", sw_pause,
      "Redis: CLIENT PAUSE limit, a safety net; default and least: "
      "--timeout plus " +
          util::format_duration(switchover::minimum_pause(util::Duration{0})) +
          " (shorter is refused)");
  switchover_cmd->fallthrough();

  std::string shell;
  auto* completion_cmd =
      app.add_subcommand("completion", "print a shell completion script (install the bash one as "
                                       "/usr/share/bash-completion/completions/dbcheck)");
  completion_cmd->add_option("shell", shell, "bash")->required()->check(CLI::IsMember({"bash"}));
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return k_exit_config;
  }
  if (completion_cmd->parsed()) {
    std::map<std::string, std::vector<std::string>> first_words;
    for (const auto& f : setup_files()) {
      first_words["setup-sql"].emplace_back(f.name);
    }
    first_words["completion"] = {"bash"};
    std::cout << bash_completion(app, first_words, {"--config"});
    return k_exit_pass;
  }
  if (switchover_cmd->parsed()) {
    return switchover(config_path(config_flag, env), sw_cluster, sw_to, sw_timeout, sw_pause,
                      sw_dry_run);
  }
  if (setup_cmd->parsed()) {
    // No configuration needed: this is what an operator runs before there is one.
    std::cout << find_setup_file(setup_name)->text;
    return k_exit_pass;
  }
  const std::string path = config_path(config_flag, env);

  if (config_cmd->parsed()) {
    auto cfg = load(path, Output::terminal, true);
    if (!cfg) {
      return cfg.error();
    }
    std::cout << fmt::format("{}: OK, {} cluster(s), {} backend(s)\n", path, cfg->clusters.size(),
                             cfg->backends.size());
    for (const auto& [name, b] : cfg->backends) {
      std::cout << fmt::format(
          "  backend {}: cluster {}, role {}, timeout {}{}\n", name, b.cluster,
          config::to_string(b.role), util::format_duration(b.timeout),
          b.role == config::Role::replica ? ", max_lag " + util::format_duration(b.max_lag) : "");
    }
    return k_exit_pass;
  }

  if (check_cmd->parsed() || explain_cmd->parsed()) {
    auto target = manual_target(backend, node);
    if (!target) {
      std::cerr << "dbcheck: " << target.error() << '\n';
      return k_exit_config;
    }
    auto report = check(path, *target, Output::terminal, started);
    if (!report) {
      return report.error();
    }
    if (check_cmd->parsed()) {
      std::cout << core::render_line(*report) << '\n';
    } else {
      std::cout << (json ? core::render_json(*report) + "\n" : core::render_text(*report));
    }
    return exit_code(*report);
  }

  // HAProxy's call.
  auto target = haproxy_target(haproxy_args, env);
  if (!target) {
    // Not HAProxy's call after all (HAProxy always sets these): say so where a person sees it.
    log_line(Output::terminal, LOG_ERR, fmt::format("dbcheck: {}", target.error()));
    return k_exit_config;
  }
  auto report = check(path, *target, Output::haproxy, started);
  if (!report) {
    return report.error();
  }
  log_line(Output::haproxy, core::passes(report->verdict) ? LOG_INFO : LOG_WARNING,
           core::render_line(*report));
  return exit_code(*report);
}

} // namespace dbcheck::extcheck
