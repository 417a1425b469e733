#include "last_logged.hpp"

#include <util/format.hpp>
#include <util/write_all.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <string_view>

namespace dbcheck::extcheck {
namespace {

// A record is a few lines; anything larger was not written here.
constexpr off_t k_max_file = 4096;
constexpr std::string_view k_magic = "dbcheck last logged 1\n";

constexpr std::array<core::State, 4> k_states = {core::State::up, core::State::down,
                                                 core::State::drain, core::State::maint};
constexpr std::array<core::Failure, 15> k_failures = {
    core::Failure::none,       core::Failure::network, core::Failure::timeout,
    core::Failure::protocol,   core::Failure::auth,    core::Failure::not_ready,
    core::Failure::saturated,  core::Failure::role,    core::Failure::lag,
    core::Failure::policy,     core::Failure::config,  core::Failure::internal,
    core::Failure::unwritable, core::Failure::slow,    core::Failure::identity};

// True when `fd` is owned by this user, closed to group and others, and of the expected kind.
bool ours(int fd, bool directory) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return false;
  }
  return directory ? S_ISDIR(st.st_mode) : (S_ISREG(st.st_mode) && st.st_size <= k_max_file);
}

// The value of the next "NAME VALUE\n" line of `text` from `pos`.
std::optional<std::string_view> field(std::string_view text, std::size_t& pos,
                                      std::string_view name) {
  const std::size_t end = text.find('\n', pos);
  if (end == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view line = text.substr(pos, end - pos);
  pos = end + 1;
  if (line.size() < name.size() + 1 || line.substr(0, name.size()) != name ||
      line[name.size()] != ' ') {
    return std::nullopt;
  }
  return line.substr(name.size() + 1);
}

template <class E, std::size_t N>
std::optional<E> named(std::string_view text, const std::array<E, N>& all) {
  for (const E e : all) {
    if (core::to_string(e) == text) {
      return e;
    }
  }
  return std::nullopt;
}

} // namespace

std::string last_logged_dir(const std::optional<std::string>& configured) {
  return configured ? *configured : util::format("/tmp/dbcheck-log-{}", ::geteuid());
}

LastLogged::LastLogged(const std::string& dir, const std::string& backend, const std::string& node)
    : m_backend(backend), m_node(node), m_key(core::logged_line_key(backend, node)) {
  ::mkdir(dir.c_str(), 0700); // EEXIST is fine: the checks below decide
  m_dir = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (m_dir < 0 || !ours(m_dir, true)) {
    return;
  }
  // A lock file of its own: the record is replaced by rename, so it cannot carry the lock.
  m_lock = ::openat(m_dir, (m_key + ".lock").c_str(),
                    O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (m_lock >= 0 && (!ours(m_lock, false) || ::flock(m_lock, LOCK_EX | LOCK_NB) != 0)) {
    ::close(m_lock);
    m_lock = -1;
  }
}

LastLogged::~LastLogged() {
  if (m_lock >= 0) {
    ::close(m_lock); // releases the lock
  }
  if (m_dir >= 0) {
    ::close(m_dir);
  }
}

std::optional<core::LoggedLine> LastLogged::read() const {
  if (m_lock < 0) {
    return std::nullopt;
  }
  const int fd =
      ::openat(m_dir, (m_key + ".last").c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;
  }
  std::string text;
  if (ours(fd, false)) {
    char buf[k_max_file + 1];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n == 0) {
        break;
      }
      if (n < 0 || text.size() + static_cast<std::size_t>(n) > k_max_file) {
        text.clear(); // an error, or more than a record: not one of ours
        break;
      }
      text.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  if (text.rfind(k_magic, 0) != 0) {
    return std::nullopt;
  }
  std::size_t pos = k_magic.size();
  const auto backend = field(text, pos, "backend");
  const auto node = field(text, pos, "node");
  const auto state = field(text, pos, "state");
  const auto failure = field(text, pos, "failure");
  const auto real_ns = field(text, pos, "real_ns");
  if (!backend || !node || !state || !failure || !real_ns || pos != text.size() ||
      *backend != m_backend || *node != m_node) {
    return std::nullopt;
  }
  core::LoggedLine line;
  const auto s = named(*state, k_states);
  const auto f = named(*failure, k_failures);
  const auto [p, ec] =
      std::from_chars(real_ns->data(), real_ns->data() + real_ns->size(), line.real_ns);
  if (!s || !f || ec != std::errc{} || p != real_ns->data() + real_ns->size()) {
    return std::nullopt;
  }
  line.state = *s;
  line.failure = *f;
  return line;
}

void LastLogged::write(const core::LoggedLine& line) const {
  if (m_lock < 0) {
    return;
  }
  const std::string text = util::format("{}backend {}\nnode {}\nstate {}\nfailure {}\nreal_ns {}\n",
                                        k_magic, m_backend, m_node, core::to_string(line.state),
                                        core::to_string(line.failure), line.real_ns);
  if (text.size() > static_cast<std::size_t>(k_max_file)) {
    return; // names too long to keep: every pass of this server is logged
  }
  // Unique among writers (pids repeat across pid namespaces sharing the directory); the lock
  // already keeps this server's other checks out.
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  const std::string tmp = util::format(".{}.{}.{:x}.tmp", m_key, ::getpid(), stamp);
  const int fd =
      ::openat(m_dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return;
  }
  const bool written = util::write_all(fd, text);
  ::close(fd);
  if (!written || ::renameat(m_dir, tmp.c_str(), m_dir, (m_key + ".last").c_str()) != 0) {
    ::unlinkat(m_dir, tmp.c_str(), 0);
  }
}

void LastLogged::forget() const {
  if (m_dir >= 0) {
    ::unlinkat(m_dir, (m_key + ".last").c_str(), 0);
  }
}

} // namespace dbcheck::extcheck
