// `dbcheck haproxy-state`: HAProxy 2.6 starts every server UP until its checks say otherwise
// (init-state came in 3.1); a server-state file written from current verdicts makes a cold
// start begin with only the right servers UP.
#include "cli.hpp"
#include "commands.hpp"
#include "parallel_checks.hpp"

#include <config/haproxy_cfg.hpp>
#include <config/load_config.hpp>
#include <core/report.hpp>
#include <core/server_state.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>

namespace dbcheck::extcheck {
namespace {

// One server of the HAProxy configuration that gets a line, and what decided it.
struct Decision {
  std::size_t index; // in HaproxyServers::servers, and in the reports
  core::ServerStart start;
  std::string why;
};

// Writes `text` to `path` whole or not at all: a temporary file beside it (0644: HAProxy
// reads it as its own user), flushed to disk, then renamed over `path`. An error names the file.
std::optional<std::string> replace_file(const std::string& path, const std::string& text) {
  const std::string tmp = fmt::format("{}.dbcheck-{}", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    return fmt::format("{}: {}", tmp, std::strerror(errno));
  }
  ::fchmod(fd, 0644); // whatever the umask
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      const std::string why = fmt::format("{}: {}", tmp, std::strerror(errno));
      ::close(fd);
      ::unlink(tmp.c_str());
      return why;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = fmt::format("{}: {}", path, std::strerror(errno));
    ::unlink(tmp.c_str());
    return why;
  }
  return std::nullopt;
}

} // namespace

int haproxy_state_command(const std::string& path, const std::string& haproxy_cfg,
                          StateOutput where, const std::string& given_output,
                          probe::Clock::time_point started) {
  auto servers = config::load_haproxy_cfg(haproxy_cfg);
  if (!servers) {
    std::cerr << "dbcheck: " << servers.error() << '\n';
    return k_exit_config;
  }
  std::string output = given_output;
  if (where == StateOutput::named_in_haproxy_cfg) {
    if (servers->state_file.empty()) {
      // The drop-in runs at every start of HAProxy: where the operator did not ask for a
      // state file, it does nothing, and says so.
      std::cerr << fmt::format("dbcheck: {} names no server-state-file: nothing written\n",
                               haproxy_cfg);
      return k_exit_pass;
    }
    output = servers->state_file;
  }
  for (const auto& s : servers->skipped) {
    std::cerr << "dbcheck: no line for " << s << '\n';
  }
  auto cfg = config::load_config(path);
  int exit = k_exit_pass;
  if (!cfg) {
    // Fail safe: every server HAProxy checks starts DOWN and comes UP by its own checks.
    for (const auto& m : cfg.error().messages) {
      std::cerr << "dbcheck: configuration error: " << m << '\n';
    }
    exit = k_exit_config;
  }
  std::vector<Decision> decisions;
  std::vector<CheckJob> jobs;
  std::vector<std::optional<std::size_t>> job_of(servers->servers.size()); // index in jobs
  decisions.reserve(servers->servers.size());
  for (std::size_t i = 0; i < servers->servers.size(); ++i) {
    const config::HaproxyServer& s = servers->servers[i];
    const config::Backend* backend = nullptr;
    if (cfg) {
      const auto b = cfg->backends.find(s.backend);
      if (b == cfg->backends.end()) {
        continue; // not dbcheck's backend: HAProxy's own start, untouched
      }
      backend = &b->second;
    }
    if (!s.checked || !s.port) {
      // A server HAProxy never checks would stay DOWN for good; one without a port cannot be
      // checked by address: both keep HAProxy's own start.
      std::cerr << fmt::format("dbcheck: no line for {}:{}: server {}/{}: {}\n", haproxy_cfg,
                               s.line, s.backend, s.name,
                               !s.checked ? "no `check` on it" : "no port in its address");
      continue;
    }
    Decision d{i, {s.backend, s.name, *s.port, false}, "the configuration could not be loaded"};
    if (backend != nullptr) {
      const auto unreadable = cfg->unreadable.find(backend->cluster);
      if (unreadable != cfg->unreadable.end()) {
        d.why = unreadable->second.empty() ? "a password file cannot be read"
                                           : unreadable->second.front();
      } else {
        const config::Cluster& cluster = cfg->clusters.at(backend->cluster);
        job_of[i] = jobs.size();
        jobs.push_back({&cluster, backend, util::HostPort{s.host, *s.port}});
      }
    }
    decisions.push_back(std::move(d));
  }
  const std::vector<core::Report> reports = run_checks(jobs, started);
  std::vector<core::ServerStart> starts;
  for (Decision& d : decisions) {
    const config::HaproxyServer& s = servers->servers[d.index];
    if (const auto j = job_of[d.index]) {
      d.start.up = core::passes(reports[*j].verdict);
      d.why = core::render_line(reports[*j]);
    } else {
      d.why = fmt::format("{} {}:{} DOWN: {}", s.backend, s.host, *s.port, d.why);
    }
    std::cerr << fmt::format("{}/{} starts {}: {}\n", s.backend, s.name, d.start.up ? "UP" : "DOWN",
                             d.why);
    starts.push_back(d.start);
  }
  const std::string text = core::render_server_state(starts);
  if (output.empty()) {
    std::cout << text << std::flush;
    return std::cout ? exit : k_exit_config;
  }
  if (auto why = replace_file(output, text)) {
    std::cerr << "dbcheck: cannot write the state file: " << *why << '\n';
    return k_exit_config;
  }
  return exit;
}

} // namespace dbcheck::extcheck
