#pragma once
// Making a process started by HAProxy safe to run (HAProxy 2.6, connect_proc_chk in
// src/extcheck.c: with -D, descriptors 0-2 are closed in the child; SIG_IGN dispositions are
// inherited).

#include <optional>
#include <string>

namespace dbcheck::extcheck {

// --- Interface ---

// Reopens any of fds 0-2 that HAProxy closed (daemon mode) on /dev/null, so nothing we open
// later lands on fd 1 or 2 and receives our log output. Call before opening anything.
void reopen_standard_fds();

// Ignores SIGPIPE: a peer closing early must surface as EPIPE on that socket, not kill us.
void ignore_sigpipe();

// Blocks SIGINT and SIGTERM in the calling thread and in every thread it starts afterwards
// (call before starting any): they stay pending until take_stop_signal() takes one, so a
// switchover is never stopped half-way and no handler runs async-signal-unsafe code.
void block_stop_signals();

// Takes a pending SIGINT or SIGTERM without waiting: "SIGINT"/"SIGTERM", or nullopt when
// none is pending (block_stop_signals() first).
std::optional<std::string> take_stop_signal();

// Removes PG* variables, so libpq cannot pick up hosts, options or files from whoever ran us.
void scrub_libpq_environment();

} // namespace dbcheck::extcheck
