#include "commands.hpp"

#include "cli.hpp"
#include "last_logged.hpp"
#include "process_setup.hpp"
#include "syslog_line.hpp"

#include <config/load_config.hpp>
#include <core/report.hpp>
#include <probe/run_check.hpp>
#include <switchover/switchover.hpp>
#include <util/format.hpp>

#include <syslog.h>
#include <unistd.h>

#include <iostream>

namespace dbcheck::extcheck {
namespace {

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
      log_line(out, LOG_ERR, util::format("configuration error: {}", m));
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
    log_line(out, LOG_ERR, util::format("configuration error: {}", m));
  }
  return true;
}

// Loads the config and checks `target`; on a config problem logs it and returns exit code 2.
// `log` receives the file's [log] settings.
tl::expected<core::Report, int> check(const std::string& path, const Target& target, Output out,
                                      probe::Clock::time_point started,
                                      config::LogSettings* log = nullptr) {
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
             util::format("configuration error: {}: no [backend.{}] (HAProxy backend names must "
                          "match; known: {})",
                          path, target.backend, known));
    return tl::make_unexpected(k_exit_config);
  }
  if (unreadable(*cfg, b->second.cluster, out)) {
    return tl::make_unexpected(k_exit_config);
  }
  if (log != nullptr) {
    *log = cfg->log;
  }
  const config::Cluster& cluster = cfg->clusters.at(b->second.cluster);
  return probe::run_check(cluster, b->second, target.node, started);
}

// Logs a check's line when core::should_log says so (every failure; a pass that differs from
// the server's last line, or after pass_heartbeat), and records what was logged.
void log_verdict(const core::Report& r, const config::LogSettings& settings) {
  const core::Verdict& v = r.verdict;
  const std::string line = core::render_line(r);
  const int priority = core::passes(v) ? LOG_INFO : LOG_WARNING;
  if (settings.passes == core::PassLogging::all) {
    log_line(Output::haproxy, priority, line); // every line: no record to keep
    return;
  }
  const std::int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  const LastLogged last(last_logged_dir(settings.state_dir), r.backend, r.node);
  if (!core::passes(v)) {
    last.forget();
  }
  if (core::should_log(v, last.read(), now_ns, settings.passes, settings.pass_heartbeat)) {
    log_line(Output::haproxy, priority, line);
    last.write(core::LoggedLine{v.state, v.failure, now_ns});
  } else if (::isatty(STDERR_FILENO) != 0) {
    std::cerr << line << '\n'; // run by hand: the person sees the line syslog is spared
  }
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

// `text` parsed by `parse` (an empty text: nullopt, the option was not given); on an error,
// logs it naming `option` and returns nothing (the caller exits 2).
template <class Parse>
auto parse_option(const char* option, const std::string& text, Parse parse)
    -> std::optional<std::optional<typename decltype(parse(text))::value_type>> {
  using Value = typename decltype(parse(text))::value_type;
  if (text.empty()) {
    return std::optional<Value>{};
  }
  auto parsed = parse(text);
  if (!parsed) {
    std::cerr << util::format("dbcheck: {} {}: {}\n", option, text, parsed.error());
    return std::nullopt;
  }
  return std::optional<Value>{std::move(*parsed)};
}

} // namespace

int switchover_command(const std::string& path, const SwitchoverArgs& args) {
  // Before anything starts a thread: SIGINT/SIGTERM are then only taken between steps, and
  // run the release of the old master instead of killing the process half-way.
  block_stop_signals();
  auto cfg = load(path, Output::terminal);
  if (!cfg) {
    return cfg.error();
  }
  const auto it = cfg->clusters.find(args.cluster);
  if (it == cfg->clusters.end()) {
    std::cerr << util::format("dbcheck: {}: no [cluster.{}]\n", path, args.cluster);
    return k_exit_config;
  }
  if (unreadable(*cfg, args.cluster, Output::terminal)) {
    return k_exit_config;
  }
  switchover::SwitchoverOptions options;
  options.dry_run = args.dry_run;
  options.interrupted = take_stop_signal;
  // Every option is read before anything is asked: a typo is a usage error, never a half-run.
  const auto timeout = parse_option("--timeout", args.timeout, util::parse_duration);
  const auto pause = parse_option("--pause", args.pause, util::parse_duration);
  const auto to = parse_option("--to", args.to, util::parse_host_port);
  if (!timeout || !pause || !to) {
    return k_exit_usage;
  }
  options.timeout = timeout->value_or(options.timeout); // an empty --timeout: the default
  options.pause = *pause;
  options.to = *to;
  if (options.pause) {
    if (auto why = switchover::pause_refused(*options.pause, options.timeout)) {
      std::cerr << "dbcheck: " << *why << '\n';
      return k_exit_usage;
    }
  }
  const auto progress = [](const switchover::SwitchoverEvent& e) {
    std::cout << util::format("[{:6.1f}s] {:<9} {}{}\n", e.elapsed_s,
                              switchover::to_string(e.phase),
                              !e.finished ? "waiting for: "
                              : e.ok      ? "done: "
                                          : "FAILED: ",
                              e.text)
              << std::flush;
  };
  const switchover::SwitchoverResult r = switchover::run_switchover(it->second, options, progress);
  if (!r.plan.empty() && (args.dry_run || !r.ok)) {
    std::cout << (args.dry_run ? "plan (dry run, nothing changed):\n" : "the plan was:\n");
    for (std::size_t i = 0; i < r.plan.size(); ++i) {
      std::cout << util::format("  {}. {}\n", i + 1, r.plan[i]);
    }
  }
  std::string phases;
  for (const auto& p : r.phases) {
    phases += util::format("{}{} {:.1f}s", phases.empty() ? "" : ", ",
                           switchover::to_string(p.phase), p.seconds);
  }
  if (!r.ok) {
    if (!r.advice.empty()) {
      std::cout << util::format("{}: {}\n", r.left_paused ? "OPERATOR ACTION NEEDED" : "to do",
                                r.advice);
    }
    std::cout << util::format("switchover of {} {} in {} after {:.1f}s: {} ({})\n", args.cluster,
                              r.interrupted_by ? "INTERRUPTED" : "FAILED",
                              switchover::to_string(*r.failed), r.total_s, r.error, phases)
              << std::flush;
    return switchover_exit(r);
  }
  if (args.dry_run) {
    std::cout << util::format("dry run of {}: the cluster is ready ({})\n", args.cluster, phases);
  } else {
    std::cout << util::format("switchover of {}: {} -> {} in {:.1f}s ({})\n", args.cluster,
                              r.old_primary, r.new_primary, r.total_s, phases);
  }
  return k_exit_pass;
}

int haproxy_check(const std::string& path, const std::vector<std::string>& args, const Env& env,
                  probe::Clock::time_point started) {
  auto target = haproxy_target(args, env);
  if (!target) {
    // Say so where a person sees it: without HAProxy's shape, a person typed it.
    log_line(Output::terminal, LOG_ERR, util::format("dbcheck: {}", target.error()));
    return shaped_like_haproxy(args, env) ? k_exit_config : k_exit_usage;
  }
  config::LogSettings settings;
  auto report = check(path, *target, Output::haproxy, started, &settings);
  if (!report) {
    return report.error();
  }
  log_verdict(*report, settings);
  return exit_code(*report);
}

int manual_check(const std::string& path, const std::string& backend, const std::string& node,
                 Shape shape, probe::Clock::time_point started) {
  auto target = manual_target(backend, node);
  if (!target) {
    std::cerr << "dbcheck: " << target.error() << '\n';
    return k_exit_usage;
  }
  auto report = check(path, *target, Output::terminal, started);
  if (!report) {
    return report.error();
  }
  switch (shape) {
  case Shape::line:
    std::cout << core::render_line(*report) << '\n';
    break;
  case Shape::text:
    std::cout << core::render_text(*report);
    break;
  case Shape::json:
    std::cout << core::render_json(*report) + "\n";
    break;
  }
  return exit_code(*report);
}

} // namespace dbcheck::extcheck
