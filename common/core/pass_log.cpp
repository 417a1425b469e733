#include "pass_log.hpp"

#include <util/format.hpp>

namespace dbcheck::core {

bool should_log(const Verdict& verdict, const std::optional<LoggedLine>& last,
                std::int64_t now_real_ns, PassLogging mode, std::chrono::milliseconds heartbeat) {
  if (!passes(verdict) || mode == PassLogging::all || !last) {
    return true;
  }
  if (last->state != verdict.state || last->failure != verdict.failure) {
    return true;
  }
  const std::int64_t age_ns = now_real_ns - last->real_ns;
  if (age_ns < 0) {
    return true;
  }
  const auto beat = std::chrono::duration_cast<std::chrono::nanoseconds>(heartbeat).count();
  return beat > 0 && age_ns >= beat;
}

std::string logged_line_key(std::string_view backend, std::string_view node) {
  // FNV-1a, 64 bits: a name, not a secret; the file repeats both names, so a collision is seen.
  std::uint64_t h = 14695981039346656037ULL;
  const auto mix = [&h](std::string_view s) {
    for (const char c : s) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ULL;
    }
    h ^= '\n';
    h *= 1099511628211ULL;
  };
  mix(backend);
  mix(node);
  return util::format("last-{:016x}", h);
}

} // namespace dbcheck::core
