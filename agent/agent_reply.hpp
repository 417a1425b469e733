#pragma once
// The one line the agent answers HAProxy's agent-check with (the grammar of HAProxy 2.6's
// configuration.txt, "agent-check"; tcpcheck_agent_expect_reply in src/tcpcheck.c), and the
// backend name read from the agent-send line it answers: pure, so every case is unit-tested.

#include <core/verdict.hpp>

#include <string>
#include <string_view>

namespace dbcheck::agent {

// What decides one reply.
struct ReplyInput {
  bool known = true;        // the backend exists in the configuration
  std::string backend;      // as asked (for "unknown backend <name>")
  core::Verdict reported;   // the damped verdict
  bool stale = false;       // the prober has not refreshed it for longer than stale_after
  double age_s = 0;         // seconds since the last round (for the stale reason)
  bool draining = false;    // drain file present, or shutting down
  std::string drain_reason; // why draining
  bool send_ready = false;  // undo a drain this agent set itself (never an operator's)
  bool reasons = true;      // false (expose_reasons = false): no "#reason" on any line
};

// --- Interface ---

// "up 100%\n", "up 50% #lag ...\n", "down #reason\n", "drain up|down #reason\n", optionally led by
// "ready". Reasons are cut to keep the line far below HAProxy's buffer and contain no newline;
// without in.reasons, every line ends at its state and weight.
std::string agent_reply(const ReplyInput& in);

// The backend name in an agent-send line: text before the first '/', '\r' or '\n', trimmed
// ("pg_write/pg1\n" -> "pg_write").
std::string backend_from_request(std::string_view line);

} // namespace dbcheck::agent
