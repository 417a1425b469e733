#include "shared_views.hpp"

#include <core/shared_view.hpp>
#include <util/format.hpp>
#include <util/owned_fd.hpp>
#include <util/write_all.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string_view>

namespace dbcheck::probe {
namespace {

// A /cluster answer is a few KiB; a file larger than this was not written by a check.
constexpr off_t k_max_file = 1024 * 1024;
constexpr std::string_view k_magic = "dbcheck shared view 1\n";

// True when `fd` is owned by this user and closed to group and others.
bool ours(int fd, bool directory) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return false;
  }
  return directory ? S_ISDIR(st.st_mode) : (S_ISREG(st.st_mode) && st.st_size <= k_max_file);
}

// The directory opened, when it is safely ours; created first when `create` and missing.
int open_dir(const std::string& dir, bool create) {
  constexpr int k_flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::open(dir.c_str(), k_flags);
  if (fd < 0 && errno == ENOENT && create) {
    ::mkdir(dir.c_str(), 0700); // EEXIST (another check was first) is fine: the checks below decide
    fd = ::open(dir.c_str(), k_flags);
  }
  if (fd >= 0 && !ours(fd, true)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::int64_t ns_since_epoch(auto now) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
}

// The next "NAME VALUE\n" line of `text` from `pos`, its value as a number.
std::optional<std::int64_t> field(std::string_view text, std::size_t& pos, std::string_view name) {
  const std::size_t end = text.find('\n', pos);
  if (end == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view line = text.substr(pos, end - pos);
  pos = end + 1;
  if (line.size() <= name.size() + 1 || line.substr(0, name.size()) != name ||
      line[name.size()] != ' ') {
    return std::nullopt;
  }
  line.remove_prefix(name.size() + 1);
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
  if (ec != std::errc{} || p != line.data() + line.size()) {
    return std::nullopt;
  }
  return v;
}

} // namespace

std::string shared_view_dir(const ShareSettings& settings) {
  return settings.dir.empty() ? util::format("/tmp/dbcheck-shared-{}", ::geteuid()) : settings.dir;
}

std::optional<SharedView> read_shared_view(const std::string& dir, const std::string& key,
                                           std::chrono::milliseconds max_age) {
  util::OwnedFd d{open_dir(dir, false)};
  if (d.get() < 0) {
    return std::nullopt;
  }
  util::OwnedFd f{
      ::openat(d.get(), (key + ".view").c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  if (f.get() < 0 || !ours(f.get(), false)) {
    return std::nullopt;
  }
  std::string text;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(f.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return std::nullopt;
    }
    if (n == 0) {
      break;
    }
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > static_cast<std::size_t>(k_max_file)) {
      return std::nullopt;
    }
  }
  if (text.rfind(k_magic, 0) != 0) {
    return std::nullopt;
  }
  std::size_t pos = k_magic.size();
  const auto steady = field(text, pos, "steady_ns");
  const auto real = field(text, pos, "real_ns");
  const auto pid = field(text, pos, "pid");
  const auto agreeing = field(text, pos, "agreeing");
  const auto configured = field(text, pos, "configured");
  const auto body_len = field(text, pos, "body");
  if (!steady || !real || !pid || !agreeing || !configured || !body_len || *body_len < 0 ||
      *steady < 0 || *real < 0 || *agreeing < 0 || *configured < *agreeing ||
      text.size() - pos != static_cast<std::size_t>(*body_len)) {
    return std::nullopt; // half-written files never appear (rename), so this one is not ours
  }
  const std::chrono::nanoseconds steady_age{ns_since_epoch(std::chrono::steady_clock::now()) -
                                            *steady};
  const std::chrono::nanoseconds real_age{ns_since_epoch(std::chrono::system_clock::now()) - *real};
  if (!core::shared_view_fresh(steady_age, real_age, max_age)) {
    return std::nullopt;
  }
  SharedView v;
  v.body = text.substr(pos);
  v.agreeing = static_cast<std::size_t>(*agreeing);
  v.configured = static_cast<std::size_t>(*configured);
  v.pid = static_cast<long>(*pid);
  v.age_ms = std::chrono::duration<double, std::milli>(steady_age).count();
  return v;
}

std::optional<std::chrono::nanoseconds> mark_check(const std::string& dir, const std::string& key) {
  util::OwnedFd d{open_dir(dir, true)};
  if (d.get() < 0) {
    return std::nullopt;
  }
  const std::string name = key + ".mark";
  constexpr int k_flags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  util::OwnedFd f{::openat(d.get(), name.c_str(), k_flags | O_CREAT | O_EXCL, 0600)};
  const bool created = f.get() >= 0;
  if (!created) {
    f = util::OwnedFd{::openat(d.get(), name.c_str(), k_flags)};
  }
  struct stat before {};
  if (f.get() < 0 || !ours(f.get(), false) || ::fstat(f.get(), &before) != 0) {
    return std::nullopt;
  }
  // The monotonic clock of the check before, as it wrote it; then this check's, in its place
  // (the write also sets the modification time, the wall clock's view of the same moment).
  char buf[64] = {};
  const ssize_t got = created ? 0 : ::pread(f.get(), buf, sizeof buf - 1, 0);
  const std::int64_t now = ns_since_epoch(std::chrono::steady_clock::now());
  const std::string text = util::format("steady_ns {:020}\n", now); // one width: no tail left
  struct stat after {};
  const ssize_t put = ::pwrite(f.get(), text.data(), text.size(), 0);
  if (put != static_cast<ssize_t>(text.size()) || ::fstat(f.get(), &after) != 0 || got <= 0) {
    return std::nullopt;
  }
  std::size_t pos = 0;
  const auto then = field(std::string_view{buf, static_cast<std::size_t>(got)}, pos, "steady_ns");
  if (!then || *then <= 0 || *then > now) {
    return std::nullopt; // another boot's, or not a mark
  }
  const auto at = [](const struct timespec& t) {
    return std::chrono::seconds{t.tv_sec} + std::chrono::nanoseconds{t.tv_nsec};
  };
  const std::chrono::nanoseconds steady{now - *then};
  // A mark kept across a reboot, or a clock that stepped, says nothing of the cadence. The file
  // system's coarse time is only the witness; the monotonic time is the measure.
  if (!core::clocks_agree(steady, at(after.st_mtim) - at(before.st_mtim))) {
    return std::nullopt;
  }
  return steady;
}

void write_shared_view(const std::string& dir, const std::string& key, const SharedView& view) {
  util::OwnedFd d{open_dir(dir, true)};
  if (d.get() < 0) {
    return;
  }
  const auto steady_now = ns_since_epoch(std::chrono::steady_clock::now());
  // A name no other writer uses (pids repeat across pid namespaces sharing the directory).
  const std::string tmp = util::format(".{}.{}.{:x}.tmp", key, ::getpid(), steady_now);
  util::OwnedFd f{
      ::openat(d.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
  if (f.get() < 0) {
    return;
  }
  const auto before = view.asked_before.count() > 0 ? view.asked_before.count() : 0;
  std::string text{k_magic};
  text +=
      util::format("steady_ns {}\nreal_ns {}\npid {}\nagreeing {}\nconfigured {}\nbody {}\n",
                   steady_now - before, ns_since_epoch(std::chrono::system_clock::now()) - before,
                   ::getpid(), view.agreeing, view.configured, view.body.size());
  text += view.body;
  if (!util::write_all(f.get(), text)) {
    ::unlinkat(d.get(), tmp.c_str(), 0);
    return;
  }
  if (::renameat(d.get(), tmp.c_str(), d.get(), (key + ".view").c_str()) != 0) {
    ::unlinkat(d.get(), tmp.c_str(), 0);
  }
}

} // namespace dbcheck::probe
