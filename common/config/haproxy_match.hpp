#pragma once
// dbcheck.toml against haproxy.cfg: which HAProxy servers ask dbcheck for a verdict, under which
// [backend.NAME], and every way the two files disagree (`dbcheck config-check
// --haproxy-config`). Pure: both files arrive parsed; each finding names file:line of both.
//
// A checked server runs dbcheck when its backend has `option external-check` with an
// `external-check command` whose file name starts with `dbcheck` (the binary, or a wrapper
// that gives it --config; not dbcheck-agent): HAProxy passes the backend name, which must be a
// [backend.NAME]. Or when it has `agent-check` and dbcheck-agent is evidently the agent: the
// agent answers for the name its `agent-send` line gives (else agent.default_backend), and
// that counts when dbcheck.toml has an [agent] section (the agent reads this same file) or
// the name is one of its [backend.NAME]s. Without [agent], an agent-send naming no backend is
// taken for another agent's, not reported.

#include "config.hpp"
#include "haproxy_cfg.hpp"

#include <string>
#include <vector>

namespace dbcheck::config {

// How HAProxy asks dbcheck about a server.
enum class CheckKind { external, agent };

// One HAProxy server whose state dbcheck decides, and the [backend.NAME] it is judged by.
struct DbcheckServer {
  const HaproxyServer* server;   // into the HaproxyServers given
  const HaproxyBackend* backend; // its section
  CheckKind kind = CheckKind::external;
  std::string asks; // the [backend.NAME] asked for ("" : an agent with nothing to go by)
};

// --- Interface ---

// The servers of `h` that run dbcheck (see the header's rule), in file order; a server with no
// `check` (external checks) is left out: HAProxy never asks about it.
std::vector<DbcheckServer> dbcheck_servers(const Config& cfg, const HaproxyServers& h);

// Every disagreement between `cfg` and `h` (read from `haproxy_path`), each one line a tired
// operator can act on, naming file:line of both files where each has one: a backend that
// runs dbcheck with no [backend.NAME] (with the nearest name as a hint) and a [backend.NAME]
// no HAProxy backend runs dbcheck for; a dbcheck server without `check`; a `timeout` not
// below HAProxy's kill time for the check (min(inter, timeout connect) with `timeout check`
// set, else inter); a shared_view_max_age longer than `inter`. Empty: the files agree.
std::vector<std::string> compare_with_haproxy(const Config& cfg, const HaproxyServers& h,
                                              const std::string& haproxy_path);

// The time after which HAProxy kills (SIGTERM) a running external check of `s` in `b`.
util::Duration external_check_kill_time(const HaproxyBackend& b, const HaproxyServer& s);

} // namespace dbcheck::config
