#include "agent_app.hpp"

#include "agent.hpp"
#include "agent_server.hpp"
#include "http_server.hpp"
#include "log_line.hpp"
#include "service_manager.hpp"

#include <config/load_config.hpp>
#include <config/password_file.hpp>
#include <probe/library_versions.hpp>
#include <util/format.hpp>

#include <CLI/CLI.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace dbcheck::agent {
namespace {

using probe::Clock;
using namespace std::chrono_literals;

// As many open files as the hard limit allows: each idle poller holds one for up to 100 ms.
// Returns the soft limit in force afterwards.
std::size_t raise_nofile_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) {
    return 1024;
  }
  if (r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
    ::getrlimit(RLIMIT_NOFILE, &r);
  }
  return static_cast<std::size_t>(r.rlim_cur);
}

// Keeps descriptors for the probers' database connections whatever the pollers do.
constexpr std::size_t k_fd_reserve = 512;

} // namespace

int run(int argc, char** argv) {
  CLI::App app{"dbcheck-agent: answers HAProxy's agent-check (and HTTP checks) from cached,\n"
               "damped verdicts of this host's database nodes. Configuration: the [agent]\n"
               "section of dbcheck's TOML file. SIGHUP reloads it, SIGTERM drains then exits.",
               "dbcheck-agent"};
  // A callback: the banner loads the client modules, which a Redis agent never needs otherwise.
  app.set_version_flag("--version", [] { return probe::version_banner("dbcheck-agent"); });
  std::string path;
  app.add_option("--config", path,
                 "configuration file (default: $DBCHECK_CONFIG, else "
                 "/etc/dbcheck/dbcheck.toml)")
      ->type_name("FILE");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (path.empty()) {
    const char* env = std::getenv("DBCHECK_CONFIG");
    path = env != nullptr && *env != '\0' ? env : std::string{config::k_default_config_path};
  }

  // Signals are taken synchronously by the main loop: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  const std::size_t fd_limit = raise_nofile_limit();

  auto loaded = config::all_readable(config::load_config(path));
  if (!loaded) {
    for (const auto& m : loaded.error().messages) {
      std::cerr << "configuration error: " << m << '\n';
    }
    return 2;
  }
  if (!loaded->agent) {
    std::cerr << "configuration error: " << path << ": no [agent] section\n";
    return 2;
  }
  if (loaded->agent->local.empty()) {
    std::cerr << "configuration error: " << path
              << ": [agent.local] names no node of this host (cluster = \"host:port\")\n";
    return 2;
  }
  Agent agent(std::make_shared<const config::Config>(std::move(*loaded)));
  const auto cfg = agent.config();

  std::size_t max_connections = cfg->agent->max_connections;
  if (fd_limit > k_fd_reserve && max_connections > fd_limit - k_fd_reserve) {
    max_connections = fd_limit - k_fd_reserve;
    log_event("warn", "agent max_connections lowered to fit the open-file limit",
              {{"max_connections", std::to_string(max_connections)},
               {"nofile", std::to_string(fd_limit)}});
  }
  AgentServer agent_server(cfg->agent->listen, cfg->agent->allow, max_connections,
                           [&agent](std::string_view b) { return agent.respond(b); });
  HttpServerOptions http_options{cfg->agent->http_listen, cfg->agent->allow, {}, {}};
  if (cfg->agent->http_certfile && cfg->agent->http_keyfile) {
    // The key is a secret (read_private_file's rules); the certificate chain is public.
    auto key = config::read_private_file(*cfg->agent->http_keyfile, "HTTPS key file", 64 * 1024);
    std::ifstream cert_in(*cfg->agent->http_certfile);
    std::string cert((std::istreambuf_iterator<char>(cert_in)), std::istreambuf_iterator<char>());
    if (!key || !cert_in || cert.empty()) {
      std::cerr << "configuration error: " << path << ": "
                << (key ? util::format("cannot read HTTPS certificate file {}",
                                       *cfg->agent->http_certfile)
                        : key.error())
                << '\n';
      return 2;
    }
    http_options.cert_pem = std::move(cert);
    http_options.key_pem = std::move(*key);
  }
  HttpServer http_server(std::move(http_options),
                         [&agent](std::string_view p) { return agent.http(p); });
  agent.start_probers();
  // Open the ports only once every backend has a verdict (at most two intervals): before that
  // the only honest answer is "no result yet", and HAProxy's agent, with rise/fall fixed at
  // 1, would take every server down on it. A refused connection changes nothing in HAProxy.
  const auto first_round_by = Clock::now() + 2 * cfg->agent->interval;
  while (!agent.all_probed() && Clock::now() < first_round_by) {
    std::this_thread::sleep_for(20ms);
  }
  agent.resume_after_restart(Clock::now());
  agent.update_drain(Clock::now());
  agent.set_agent_server(&agent_server);
  agent.set_http_server(&http_server);
  if (auto r = agent_server.start(); !r) {
    std::cerr << "dbcheck-agent: " << r.error() << '\n';
    return 1;
  }
  if (auto r = http_server.start(); !r) {
    std::cerr << "dbcheck-agent: " << r.error() << '\n';
    return 1;
  }
  for (const auto& w : cfg->warnings) {
    log_event("warn", "configuration", {{"detail", w}});
  }
  log_event("info", "started",
            {{"config", path},
             {"agent_listen", util::to_string(cfg->agent->listen)},
             {"http_listen", util::to_string(cfg->agent->http_listen)}});
  notify_service_manager("READY=1");
  const bool watchdog = watchdog_interval().has_value();

  const timespec tick{0, 200'000'000};
  for (;;) {
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    const auto now = Clock::now();
    agent.update_drain(now);
    if (sig == SIGHUP) {
      notify_service_manager("RELOADING=1");
      agent.reload();
      notify_service_manager("READY=1");
    } else if (sig == SIGTERM || sig == SIGINT) {
      if (agent.shutdown_since()) {
        log_event("info", "second signal: stopping now", {});
        break;
      }
      agent.begin_shutdown();
      agent.update_drain(Clock::now());
      log_event("info", "draining before exit",
                {{"grace", util::format_duration(agent.config()->agent->shutdown_grace)}});
      notify_service_manager("STOPPING=1");
    }
    if (const auto since = agent.shutdown_since();
        since && now - *since >= agent.config()->agent->shutdown_grace) {
      break;
    }
    if (watchdog && agent.probers_alive(now)) {
      notify_service_manager("WATCHDOG=1");
    }
  }
  log_event("info", "stopped", {});
  http_server.stop();
  agent_server.stop();
  agent.stop_probers();
  return 0;
}

} // namespace dbcheck::agent
