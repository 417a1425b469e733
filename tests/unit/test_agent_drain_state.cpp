// The agent's drain decisions (agent/drain_state.hpp), tick by tick.
#include "dbcheck_catch.hpp"

#include <drain_state.hpp>

using namespace dbcheck;
using namespace std::chrono_literals;
using agent::DrainState;

namespace {
const auto t0 = probe::Clock::now();
constexpr probe::Clock::duration k_window = 10s;
} // namespace

TEST_CASE("a drain of our own: started, ended, ready for the window, then forgotten",
          "[agent][drain]") {
  DrainState d;
  auto c = d.update("", t0, k_window);
  CHECK_FALSE(c.started);
  CHECK_FALSE(d.draining());

  c = d.update("drain file /run/x present", t0 + 1s, k_window);
  CHECK(c.started);
  CHECK(d.draining());
  CHECK(d.reason() == "drain file /run/x present");
  CHECK_FALSE(d.send_ready(t0 + 1s));

  c = d.update("drain file /run/x present", t0 + 2s, k_window);
  CHECK_FALSE(c.started); // once, not every tick
  CHECK_FALSE(c.ended);

  c = d.update("", t0 + 3s, k_window);
  CHECK(c.ended);
  CHECK_FALSE(c.forget_marker);
  CHECK_FALSE(d.draining());
  CHECK(d.reason().empty());
  CHECK(d.send_ready(t0 + 3s));
  CHECK(d.send_ready(t0 + 12s));

  c = d.update("", t0 + 13s, k_window);
  CHECK(c.forget_marker);
  CHECK_FALSE(d.send_ready(t0 + 13s));
  c = d.update("", t0 + 14s, k_window);
  CHECK_FALSE(c.forget_marker); // once
}

TEST_CASE("no ready without a drain of our own", "[agent][drain]") {
  // An operator's drain set through HAProxy's runtime API must survive: the agent never sends
  // "ready" unless it drained itself (or did before a restart).
  DrainState d;
  d.resume(false, t0, k_window);
  d.update("", t0 + 1s, k_window);
  CHECK_FALSE(d.send_ready(t0 + 1s));
}

TEST_CASE("after a restart, our marker means ready for the window", "[agent][drain]") {
  DrainState d;
  d.resume(true, t0, k_window);
  CHECK(d.send_ready(t0 + 1s));
  auto c = d.update("", t0 + 5s, k_window);
  CHECK_FALSE(c.forget_marker);
  c = d.update("", t0 + 10s, k_window);
  CHECK(c.forget_marker);
  CHECK_FALSE(d.send_ready(t0 + 10s));
}

TEST_CASE("draining again inside the ready window stops ready until it ends again",
          "[agent][drain]") {
  DrainState d;
  d.update("dbcheck-agent is shutting down", t0, k_window);
  d.update("", t0 + 1s, k_window);
  REQUIRE(d.send_ready(t0 + 2s));
  auto c = d.update("drain file /run/x present", t0 + 2s, k_window);
  CHECK(c.started);
  CHECK(d.draining());
  // The agent's reply leads with drain while draining; the window itself still runs.
  c = d.update("", t0 + 4s, k_window);
  CHECK(c.ended);
  CHECK(d.send_ready(t0 + 13s)); // a fresh window from the second end
}
