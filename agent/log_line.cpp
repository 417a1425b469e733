#include "log_line.hpp"

#include <util/format.hpp>

#include <unistd.h>

#include <chrono>
#include <ctime>

namespace dbcheck::agent {
namespace {

std::string value(std::string_view v) {
  const bool plain = !v.empty() && v.find_first_of(" \"=\\\t\n") == std::string_view::npos;
  if (plain) {
    return std::string{v};
  }
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string now_utc() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return util::format("{}.{:03d}Z", buf, ms.count());
}

} // namespace

std::string format_event(std::string_view level, std::string_view msg,
                         std::initializer_list<std::pair<std::string_view, std::string>> fields,
                         std::string_view time) {
  std::string line = util::format("time={} level={} msg={}", time, level, value(msg));
  for (const auto& [k, v] : fields) {
    line += util::format(" {}={}", k, value(v));
  }
  return line + "\n";
}

void log_event(std::string_view level, std::string_view msg,
               std::initializer_list<std::pair<std::string_view, std::string>> fields) {
  const std::string line = format_event(level, msg, fields, now_utc());
  // One write(2) per line: lines from several threads never interleave.
  [[maybe_unused]] const auto n = ::write(STDERR_FILENO, line.data(), line.size());
}

} // namespace dbcheck::agent
