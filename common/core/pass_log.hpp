#pragma once
// Which external checks write a syslog line. HAProxy runs one check per server every few
// seconds; a line for each pass buries the failures and transitions an operator looks for,
// so by default a pass is logged only when it says something the last line did not.

#include "verdict.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dbcheck::core {

// [log] passes: "changes" logs a pass only after a different line (or none, or long ago);
// "all" logs every one.
enum class PassLogging { changes, all };

// The last line logged for one server: what it said, and when (real time, nanoseconds since
// the epoch: each check is a new process, so no monotonic clock spans two of them).
struct LoggedLine {
  State state = State::down;
  Failure failure = Failure::none;
  std::int64_t real_ns = 0;
};

// --- Interface ---

// True when the check that ended in `verdict` at `now_real_ns` must write its line. Failures
// always; a pass under PassLogging::all always; under changes, a pass when nothing is known
// of the last line (`last` nullopt: none yet, unreadable, corrupt), when the last line said
// another state or failure class (a transition, with its cause), or when it is at least
// `heartbeat` old (0: no heartbeat) or dated in the future (the clock was set back).
bool should_log(const Verdict& verdict, const std::optional<LoggedLine>& last,
                std::int64_t now_real_ns, PassLogging mode, std::chrono::milliseconds heartbeat);

// The file name the last line of (`backend`, `node`) is kept under: "last-" and 16 hex digits
// of a hash of both (names of any characters become a safe, bounded file name).
std::string logged_line_key(std::string_view backend, std::string_view node);

} // namespace dbcheck::core
