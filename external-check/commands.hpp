#pragma once
// What each dbcheck command does once its arguments are parsed: HAProxy's check, check and
// explain by hand, config-check, switchover. cli.cpp only defines and parses the command
// line and calls one of these; each returns the process exit code (cli.hpp).

#include "invocation.hpp"

#include <config/config.hpp>
#include <probe/deadline.hpp>

#include <tl/expected.hpp>

#include <string>
#include <vector>

namespace dbcheck::extcheck {

// Where a run's single reason line goes.
enum class Output { haproxy, terminal };

// How `check` and `explain` print a report.
enum class Shape { line, text, json };

// The arguments of `dbcheck switchover`, as typed.
struct SwitchoverArgs {
  std::string cluster;
  std::string to;
  std::string timeout = "60s";
  std::string pause;
  bool dry_run = false;
};

// --- Interface ---

// HAProxy's call: the target from its arguments and environment; the reason to syslog.
int haproxy_check(const std::string& path, const std::vector<std::string>& args, const Env& env,
                  probe::Clock::time_point started);

// `dbcheck check|explain BACKEND NODE`: the report on stdout in `shape`.
int manual_check(const std::string& path, const std::string& backend, const std::string& node,
                 Shape shape, probe::Clock::time_point started);

// `dbcheck config-check`: every problem of the file, or a summary of what it defines; with
// `haproxy_cfg` (not ""), every mismatch with HAProxy's configuration (config/haproxy_match.hpp),
// and with `live`, a table of one check of each server HAProxy asks dbcheck about. Exit 0 when
// all agree, 2 for a configuration error or any mismatch (live verdicts do not change it).
int config_check(const std::string& path, const std::string& haproxy_cfg, bool live);

// Where `dbcheck haproxy-state` writes its file.
enum class StateOutput { stdout_only, file, named_in_haproxy_cfg };

// `dbcheck haproxy-state`: the server-state file `haproxy_cfg` names, as HAProxy last saved it,
// with the operational state of each server of dbcheck's backends set from its verdict, checked
// now (every other field and server kept): on stdout, or replacing `output` (or that file)
// atomically; each server's verdict on stderr. Exit 0, also when there is no dbcheck
// configuration at `path` (nothing written); 2 when it cannot be loaded, the saved file cannot
// be read or understood, or nothing could be written (nothing written then either).
int haproxy_state_command(const std::string& path, const std::string& haproxy_cfg,
                          StateOutput where, const std::string& output,
                          probe::Clock::time_point started);

// `dbcheck status`: for `cluster` (every cluster when empty), the manager's view and each
// node's verdict for each backend using it, the nodes being those the manager names and the
// servers of those backends in `haproxy_cfg`; as text or JSON; with `watch`, redrawn every
// second (marking what changed) until interrupted. Exit 0, or 2 for a configuration error.
int status_command(const std::string& path, const std::string& cluster,
                   const std::string& haproxy_cfg, bool json, bool watch);

// `dbcheck switchover`: progress on stdout as it happens, a summary, an exit code per phase.
int switchover_command(const std::string& path, const SwitchoverArgs& args);

} // namespace dbcheck::extcheck
