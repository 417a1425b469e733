#pragma once
// Keeping the passwords a process holds out of core dumps and other processes' reach.

namespace dbcheck::util {

// --- Interface ---

// Marks the process non-dumpable (no core file; /proc/PID/mem and ptrace only for root) and
// sets its core size limit to 0. Call first thing in main, before any secret is read.
void keep_memory_private();

} // namespace dbcheck::util
