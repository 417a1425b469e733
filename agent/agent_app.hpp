#pragma once
// dbcheck-agent: probers, the agent-check port, the HTTP port, signals.

namespace dbcheck::agent {

// --- Interface ---

// Runs the agent with main()'s arguments until SIGTERM/SIGINT (after the drain grace);
// returns the exit code (0 after a clean stop, 1 on a start-up failure, 2 on a bad config).
int run(int argc, char** argv);

} // namespace dbcheck::agent
