#pragma once
// dbcheck's command line: HAProxy's external-check call, and check / explain / config-check.

namespace dbcheck::extcheck {

// Exit codes, as HAProxy and scripts see them.
inline constexpr int k_exit_pass = 0;
inline constexpr int k_exit_fail = 1;
inline constexpr int k_exit_config = 2; // what HAProxy sees: a broken file, an unknown backend
// A bad command line (unknown option, missing or malformed argument): EX_USAGE of sysexits.h,
// apart from 2 so that a script can tell a typo in its call from a broken configuration.
inline constexpr int k_exit_usage = 64;
// `dbcheck switchover` only: failed in a phase (docs/switchover.md; written out, so that
// reordering the phases cannot renumber what scripts test for).
inline constexpr int k_exit_failed_preflight = 3;
inline constexpr int k_exit_failed_pause = 4;
inline constexpr int k_exit_failed_request = 5;
inline constexpr int k_exit_failed_confirm = 6;
inline constexpr int k_exit_failed_demote = 7;
inline constexpr int k_exit_failed_unpause = 8;
inline constexpr int k_exit_interrupted = 9;  // SIGINT/SIGTERM: the run stopped, released
inline constexpr int k_exit_left_paused = 10; // Redis: the old master left paused, act now

// --- Interface ---

// Runs dbcheck with main()'s arguments; returns the process exit code.
int run(int argc, char** argv);

} // namespace dbcheck::extcheck
