#pragma once
// Ending `dbcheck status --watch` when its terminal goes away, as watch(1) does: a screen no
// one can see must not keep asking the cluster (an operator's dropped SSH session).

#include <chrono>

namespace dbcheck::extcheck {

// The exit status when the output went away: what a shell reports for a process SIGHUP ended.
inline constexpr int k_exit_hangup = 128 + 1;

// --- Interface ---

// Makes SIGHUP end the process at once with k_exit_hangup, whichever thread it reaches and
// whatever it interrupts, even when it was inherited ignored or blocked (nohup, a parent's
// mask). Call before starting threads.
void end_on_hangup();

// Waits until `until`, or less when `fd` hangs up first: its terminal closed (a pty whose
// other side is gone), or the reader of its pipe gone. True when it did. A regular file or
// /dev/null never hangs up.
bool hung_up_before(int fd, std::chrono::steady_clock::time_point until);

} // namespace dbcheck::extcheck
