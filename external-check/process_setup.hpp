#pragma once
// Making a process started by HAProxy safe to run (research/haproxy.md §1.4).

namespace dbcheck::extcheck {

// --- Interface ---

// Reopens any of fds 0-2 that HAProxy closed (daemon mode) on /dev/null, so nothing we open
// later lands on fd 1 or 2 and receives our log output. Call before opening anything.
void reopen_standard_fds();

// Ignores SIGPIPE: a peer closing early must surface as EPIPE on that socket, not kill us.
void ignore_sigpipe();

// Removes PG* variables, so libpq cannot pick up hosts, options or files from whoever ran us.
void scrub_libpq_environment();

} // namespace dbcheck::extcheck
