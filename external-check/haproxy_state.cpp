// `dbcheck haproxy-state`: HAProxy 2.6 starts every server UP until its checks say otherwise
// (init-state came in 3.1); a server-state file written from current verdicts makes a cold
// start begin with only the right servers UP. It changes only the operational state of
// dbcheck's own servers: everything else of the file HAProxy last saved is kept.
#include "cli.hpp"
#include "commands.hpp"
#include "parallel_checks.hpp"

#include <config/haproxy_cfg.hpp>
#include <config/load_config.hpp>
#include <core/report.hpp>
#include <core/server_state.hpp>
#include <util/format.hpp>
#include <util/write_all.hpp>

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
  const std::string tmp = util::format("{}.dbcheck-{}", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    return util::format("{}: {}", tmp, std::strerror(errno));
  }
  ::fchmod(fd, 0644); // whatever the umask
  if (!util::write_all(fd, text)) {
    const std::string why = util::format("{}: {}", tmp, std::strerror(errno));
    ::close(fd);
    ::unlink(tmp.c_str());
    return why;
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = util::format("{}: {}", path, std::strerror(errno));
    ::unlink(tmp.c_str());
    return why;
  }
  return std::nullopt;
}

// The state file HAProxy loads, as it is now: no line when it does not exist (a boot: /run
// is empty). An error, which must keep dbcheck from replacing it, names the file and why.
tl::expected<core::SavedState, std::string> read_saved_state(const std::string& path) {
  // No link followed and no FIFO waited on: a start of HAProxy must never hang on this file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) {
      return core::SavedState{};
    }
    return tl::make_unexpected(util::format("{}: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return tl::make_unexpected(util::format("{}: not a regular file", path));
  }
  constexpr std::size_t k_max = 16 << 20; // far more than any HAProxy's servers need
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      const std::string why = util::format("{}: {}", path, std::strerror(errno));
      ::close(fd);
      return tl::make_unexpected(why);
    }
    if (n == 0) {
      break;
    }
    if (text.size() + static_cast<std::size_t>(n) > k_max) {
      ::close(fd);
      return tl::make_unexpected(util::format("{}: larger than 16 MiB", path));
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  auto saved = core::parse_server_state(text);
  if (!saved) {
    return tl::make_unexpected(util::format("{}: {}", path, saved.error()));
  }
  return saved;
}

// True when there is no file at `path` at all: a host where dbcheck was never set up, or an
// agent-mode HAProxy host (the agents, not this host, hold the configuration and passwords).
bool missing(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) != 0 && errno == ENOENT;
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
      std::cerr << util::format("dbcheck: {} names no server-state-file: nothing written\n",
                                haproxy_cfg);
      return k_exit_pass;
    }
    output = servers->state_file;
  }
  // What to do with the file HAProxy loads when dbcheck cannot decide anything: leave it.
  const std::string kept = output.empty() ? std::string("nothing is written")
                                          : util::format("{} is left as it was", output);
  if (missing(path)) {
    std::cerr << util::format("dbcheck: {} does not exist (dbcheck is not set up on this host, or "
                              "its HAProxy asks dbcheck-agent instead): {}\n",
                              path, kept);
    return k_exit_pass;
  }
  // HAProxy's last dump: what every server keeps but dbcheck's operational states.
  core::SavedState saved;
  if (!servers->state_file.empty()) {
    auto read = read_saved_state(servers->state_file);
    if (!read) {
      std::cerr << util::format("dbcheck: cannot carry the saved server states over: {}: {}\n",
                                read.error(), kept);
      return k_exit_config;
    }
    saved = std::move(*read);
  }
  auto cfg = config::load_config(path);
  if (!cfg) {
    // Which backends are dbcheck's is unknown: no server's start may be changed, and a check
    // will say the same error until the configuration is fixed.
    for (const auto& m : cfg.error().messages) {
      std::cerr << "dbcheck: configuration error: " << m << '\n';
    }
    std::cerr << util::format("dbcheck: cannot tell dbcheck's backends from others: {}\n", kept);
    return k_exit_config;
  }
  for (const auto& s : servers->skipped) {
    std::cerr << "dbcheck: no line for " << s << '\n';
  }
  std::vector<Decision> decisions;
  std::vector<CheckJob> jobs;
  std::vector<std::optional<std::size_t>> job_of(servers->servers.size()); // index in jobs
  decisions.reserve(servers->servers.size());
  for (std::size_t i = 0; i < servers->servers.size(); ++i) {
    const config::HaproxyServer& s = servers->servers[i];
    const auto b = cfg->backends.find(s.backend);
    if (b == cfg->backends.end()) {
      continue; // not dbcheck's backend: its saved line, if any, is carried over as it is
    }
    const config::Backend& backend = b->second;
    if (!s.checked || !s.port) {
      // A server HAProxy never checks would stay DOWN for good; one without a port cannot be
      // checked by address: both keep HAProxy's own start (and their saved line).
      std::cerr << util::format("dbcheck: no line for {}:{}: server {}/{}: {}\n", haproxy_cfg,
                                s.line, s.backend, s.name,
                                !s.checked ? "no `check` on it" : "no port in its address");
      continue;
    }
    Decision d{i, {s.backend, s.name, *s.port, false}, {}};
    const auto unreadable = cfg->unreadable.find(backend.cluster);
    if (unreadable != cfg->unreadable.end()) {
      d.why = unreadable->second.empty() ? "a password file cannot be read"
                                         : unreadable->second.front();
    } else {
      const config::Cluster& cluster = cfg->clusters.at(backend.cluster);
      job_of[i] = jobs.size();
      jobs.push_back({&cluster, &backend, util::HostPort{s.host, *s.port}});
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
      d.why = util::format("{} {}:{} DOWN: {}", s.backend, s.host, *s.port, d.why);
    }
    // An operator's MAINT or DRAIN is kept whatever the verdict: say so beside it.
    const std::string admin = core::saved_admin_state(saved, s.backend, s.name);
    std::cerr << util::format("{}/{} starts {}{}: {}\n", s.backend, s.name,
                              d.start.up ? "UP" : "DOWN",
                              admin.empty() ? "" : util::format(" (kept in {})", admin), d.why);
    starts.push_back(d.start);
  }
  const std::string text = core::render_server_state(saved, starts);
  if (output.empty()) {
    std::cout << text << std::flush;
    return std::cout ? k_exit_pass : k_exit_config;
  }
  if (auto why = replace_file(output, text)) {
    std::cerr << "dbcheck: cannot write the state file: " << *why << '\n';
    return k_exit_config;
  }
  return k_exit_pass;
}

} // namespace dbcheck::extcheck
