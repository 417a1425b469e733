#include "cli.hpp"

#include "commands.hpp"
#include "completion.hpp"
#include "invocation.hpp"
#include "process_setup.hpp"
#include "setup_files.hpp"

#include <probe/library_versions.hpp>
#include <switchover/switchover.hpp>
#include <util/format.hpp>

#include <CLI/CLI.hpp>

#include <functional>
#include <iostream>

extern char** environ;

namespace dbcheck::extcheck {
namespace {

// Everything the command line can say, as parsed.
struct Args {
  std::optional<std::string> config;
  std::vector<std::string> haproxy; // proxy_addr proxy_port server_addr server_port
  std::string backend;
  std::string node;
  bool json = false;
  std::string setup_name;
  SwitchoverArgs switchover;
  std::string shell;
  std::string haproxy_cfg = "/etc/haproxy/haproxy.cfg";
  std::string compare_cfg; // config-check --haproxy-config: none unless given
  bool live = false;
  std::string state_output;
  bool write_state_file = false;
  std::string status_cluster;
  bool watch = false;
};

// The subcommands, to see which one was given.
struct Commands {
  CLI::App* check = nullptr;
  CLI::App* explain = nullptr;
  CLI::App* config_check = nullptr;
  CLI::App* setup_sql = nullptr;
  CLI::App* switchover = nullptr;
  CLI::App* haproxy_state = nullptr;
  CLI::App* status = nullptr;
  CLI::App* completion = nullptr;
};

// Defines dbcheck's options and subcommands on `app`, parsing into `a`.
Commands define(CLI::App& app, Args& a) {
  Commands c;
  // Asked only when --version is given: it loads the client libraries (probe/client_loader.cpp).
  app.set_version_flag(
      "--version", std::function<std::string()>{[] { return probe::version_banner("dbcheck"); }});
  app.add_option("--config", a.config,
                 "configuration file (default: $DBCHECK_CONFIG, else /etc/dbcheck/dbcheck.toml)")
      ->type_name("FILE");
  app.add_option("haproxy_args", a.haproxy,
                 "as HAProxy passes them: proxy_addr proxy_port server_addr server_port");

  c.check = app.add_subcommand("check", "check one node once; print one line");
  c.check->add_option("backend", a.backend, "HAProxy backend name ([backend.NAME] in the config)")
      ->required();
  c.check->add_option("node", a.node, "the server as HOST:PORT, e.g. 10.0.0.1:5432")->required();
  c.check->fallthrough();

  c.explain = app.add_subcommand(
      "explain", "check one node and show each opinion, its latency, the lag derivation and "
                 "the verdict");
  c.explain->add_option("backend", a.backend, "HAProxy backend name")->required();
  c.explain->add_option("node", a.node, "the server as HOST:PORT")->required();
  c.explain->add_flag("--json", a.json, "print the explanation as JSON");
  c.explain->fallthrough();

  c.config_check = app.add_subcommand(
      "config-check", "validate the configuration file and exit (0 or 2); with --haproxy-config, "
                      "also every mismatch with HAProxy's configuration, each with file:line");
  auto* compare =
      c.config_check
          ->add_option("--haproxy-config", a.compare_cfg,
                       "compare with this HAProxy configuration: backends that run dbcheck "
                       "without a [backend.NAME] and the reverse, servers without `check`, "
                       "timeout not below HAProxy's kill time, shared_view_max_age above inter")
          ->type_name("FILE");
  c.config_check
      ->add_flag("--live", a.live,
                 "then check each server of dbcheck's backends once and print the verdicts")
      ->needs(compare);
  c.config_check->fallthrough();

  std::string setup_names;
  std::vector<std::string> names;
  for (const auto& f : setup_files()) {
    setup_names += util::format("\n  {:<9} {}", f.name, f.source_path);
    names.emplace_back(f.name);
  }
  c.setup_sql = app.add_subcommand(
      "setup-sql", "print the least-privilege setup for the check user (the files dbcheck ships "
                   "and its tests use):" +
                       setup_names);
  c.setup_sql->add_option("what", a.setup_name, "which file (listed above)")
      ->required()
      ->check(CLI::IsMember(names));

  c.switchover = app.add_subcommand(
      "switchover",
      "planned switchover of a cluster that loses no acknowledged write (Redis: pause writes, "
      "SENTINEL FAILOVER, wait for agreement, unpause; PostgreSQL: Patroni's POST /switchover, "
      "wait for agreement). SIGINT/SIGTERM stop it and release the old master. Exit 0 done, 2 "
      "configuration, 64 a bad option, 3 preflight, 4 pause, 5 request, 6 confirm, 7 demote, 8 "
      "unpause failed, "
      "9 interrupted, 10 old master left paused (the output says what to do)");
  c.switchover->add_option("cluster", a.switchover.cluster, "[cluster.NAME] in the configuration")
      ->required();
  c.switchover->add_option("--to", a.switchover.to, "the replica to promote (HOST:PORT)");
  c.switchover->add_flag("--dry-run", a.switchover.dry_run,
                         "check the cluster and print the plan only");
  c.switchover->add_option("--timeout", a.switchover.timeout,
                           "for the whole switchover (default 60s)");
  c.switchover->add_option("--pause", a.switchover.pause,
                           "Redis: CLIENT PAUSE limit, a safety net; default and least: "
                           "--timeout plus " +
                               util::format_duration(switchover::minimum_pause(util::Duration{0})) +
                               " (shorter is refused)");
  c.switchover->fallthrough();

  c.status = app.add_subcommand(
      "status", "every node of the cluster(s) in one table: the manager's view, and each "
                "backend's verdict on each node (the nodes the manager names and HAProxy's "
                "servers of those backends), with the reason for each DOWN");
  c.status->add_option("cluster", a.status_cluster, "[cluster.NAME] (default: every cluster)");
  c.status->add_option("--haproxy-config", a.haproxy_cfg, "HAProxy's configuration file")
      ->capture_default_str()
      ->type_name("FILE");
  c.status->add_flag("--json", a.json, "print it as JSON");
  c.status->add_flag("--watch", a.watch,
                     "redraw every second, marking what changed, until ^C or its terminal closes");
  c.status->fallthrough();

  c.haproxy_state = app.add_subcommand(
      "haproxy-state",
      "check every server of dbcheck's backends in an HAProxy configuration now and print a "
      "server-state file (load-server-state-from-file global) that starts a fresh HAProxy with "
      "only those that pass UP; each verdict on stderr; a server that cannot be decided starts "
      "DOWN; every other line, and every admin state (MAINT, DRAIN), is kept from the file "
      "HAProxy last saved");
  c.haproxy_state->add_option("--haproxy-config", a.haproxy_cfg, "HAProxy's configuration file")
      ->capture_default_str()
      ->type_name("FILE");
  auto* output =
      c.haproxy_state
          ->add_option("--output", a.state_output,
                       "write the file here (replaced whole, mode 0644) instead of stdout")
          ->type_name("FILE");
  c.haproxy_state
      ->add_flag("--write-state-file", a.write_state_file,
                 "write it to the server-state-file the HAProxy configuration names (none "
                 "named: nothing is written, exit 0; what dbcheck's drop-in for haproxy.service "
                 "runs)")
      ->excludes(output);
  c.haproxy_state->fallthrough();

  c.completion =
      app.add_subcommand("completion", "print a shell completion script (install the bash one as "
                                       "/usr/share/bash-completion/completions/dbcheck)");
  c.completion->add_option("shell", a.shell, "bash")->required()->check(CLI::IsMember({"bash"}));
  app.require_subcommand(0, 1);
  return c;
}

} // namespace

int run(int argc, char** argv) {
  // The check's time starts now: config loading and password files count against `timeout`.
  const auto started = probe::Clock::now();
  reopen_standard_fds();
  ignore_sigpipe();
  const Env env = env_from(environ);
  scrub_libpq_environment();

  CLI::App app{"dbcheck: HAProxy external check for PostgreSQL under Patroni and Redis/Valkey\n"
               "under Sentinel. It passes a writer only when the manager (Patroni, a Sentinel\n"
               "majority) and the node itself agree it is the primary, and a reader only when\n"
               "its lag in seconds is low.\n"
               "HAProxy runs it as: dbcheck <proxy_addr> <proxy_port> <server_addr> "
               "<server_port>\n(backend from HAPROXY_PROXY_NAME). Exit 0 pass, 1 fail, 2 "
               "configuration error,\n64 usage error (a bad command line).",
               "dbcheck"};
  Args a;
  const Commands c = define(app, a);
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
    return k_exit_usage;
  }
  if (c.completion->parsed()) {
    std::map<std::string, std::vector<std::string>> first_words;
    for (const auto& f : setup_files()) {
      first_words["setup-sql"].emplace_back(f.name);
    }
    first_words["completion"] = {"bash"};
    std::cout << bash_completion(app, first_words, {"--config", "--haproxy-config"});
    return k_exit_pass;
  }
  if (c.setup_sql->parsed()) {
    // No configuration needed: this is what an operator runs before there is one.
    std::cout << find_setup_file(a.setup_name)->text;
    return k_exit_pass;
  }
  const std::string path = config_path(a.config, env);
  if (c.switchover->parsed()) {
    return switchover_command(path, a.switchover);
  }
  if (c.status->parsed()) {
    return status_command(path, a.status_cluster, a.haproxy_cfg, a.json, a.watch);
  }
  if (c.haproxy_state->parsed()) {
    return haproxy_state_command(path, a.haproxy_cfg,
                                 a.write_state_file       ? StateOutput::named_in_haproxy_cfg
                                 : a.state_output.empty() ? StateOutput::stdout_only
                                                          : StateOutput::file,
                                 a.state_output, started);
  }
  if (c.config_check->parsed()) {
    return config_check(path, a.compare_cfg, a.live);
  }
  if (c.check->parsed()) {
    return manual_check(path, a.backend, a.node, Shape::line, started);
  }
  if (c.explain->parsed()) {
    return manual_check(path, a.backend, a.node, a.json ? Shape::json : Shape::text, started);
  }
  return haproxy_check(path, a.haproxy, env, started);
}

} // namespace dbcheck::extcheck
