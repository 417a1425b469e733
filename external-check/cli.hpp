#pragma once
// dbcheck's command line: HAProxy's external-check call, and check / explain / config-check.

namespace dbcheck::extcheck {

// Exit codes, as HAProxy and scripts see them.
inline constexpr int k_exit_pass = 0;
inline constexpr int k_exit_fail = 1;
inline constexpr int k_exit_config = 2;
// `dbcheck switchover` only (3..8: failed in a phase, 3 + SwitchoverPhase).
inline constexpr int k_exit_interrupted = 9;  // SIGINT/SIGTERM: the run stopped, released
inline constexpr int k_exit_left_paused = 10; // Redis: the old master left paused, act now

// --- Interface ---

// Runs dbcheck with main()'s arguments; returns the process exit code.
int run(int argc, char** argv);

} // namespace dbcheck::extcheck
