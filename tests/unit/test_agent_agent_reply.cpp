// The agent-check reply grammar (HAProxy 2.6), one row per case.
#include "agent_reply.hpp"
#include "dbcheck_catch.hpp"
#include "log_line.hpp"

using namespace dbcheck::agent;
using dbcheck::core::Failure;
using dbcheck::core::State;
using dbcheck::core::Verdict;

namespace {
ReplyInput with(Verdict v) {
  ReplyInput in;
  in.backend = "pg_write";
  in.reported = std::move(v);
  return in;
}
} // namespace

TEST_CASE("agent replies: health, weight, drain, ready, stale, unknown", "[agent][reply]") {
  CHECK(agent_reply(with({State::up, Failure::none, "ok"})) == "up 100%\n");
  CHECK(agent_reply(with({State::up, Failure::saturated, "saturated: 47 of 47"})) ==
        "up 50% #saturated: 47 of 47\n");
  CHECK(agent_reply(with({State::up, Failure::lag, "lagging for 1.000s"})) ==
        "up 50% #lagging for 1.000s\n");
  CHECK(agent_reply(with({State::up, Failure::slow,
                          "slow: the node answered in 612 ms, max_latency 300 ms (ok)"})) ==
        "up 50% #slow: the node answered in 612 ms, max_latency 300 ms (ok)\n");
  CHECK(agent_reply(with({State::up, Failure::timeout, "failing, 1 of 2 rounds"})) ==
        "up 100% #failing, 1 of 2 rounds\n");
  CHECK(agent_reply(with({State::down, Failure::role, "Patroni names pg2 leader"})) ==
        "down #Patroni names pg2 leader\n");

  ReplyInput ready = with({State::up, Failure::none, "ok"});
  ready.send_ready = true;
  CHECK(agent_reply(ready) == "ready up 100%\n");

  ReplyInput drain = with({State::up, Failure::none, "ok"});
  drain.draining = true;
  drain.drain_reason = "drain file /etc/dbcheck/drain present";
  CHECK(agent_reply(drain) == "drain up #drain file /etc/dbcheck/drain present\n");
  drain.reported = {State::down, Failure::role, "not the writer"};
  CHECK(agent_reply(drain) == "drain down #drain file /etc/dbcheck/drain present\n");

  ReplyInput stale = with({State::up, Failure::none, "ok"});
  stale.stale = true;
  stale.age_s = 4.25;
  CHECK(agent_reply(stale) == "down #stale: no probe result for 4.2s\n");

  ReplyInput unknown;
  unknown.known = false;
  unknown.backend = "nope";
  CHECK(agent_reply(unknown) == "down #unknown backend nope\n");
}

TEST_CASE("expose_reasons = false: states and weights only", "[agent][reply]") {
  const auto hidden = [](ReplyInput in) {
    in.reasons = false;
    return agent_reply(in);
  };
  CHECK(hidden(with({State::down, Failure::role, "Patroni names pg2 leader"})) == "down\n");
  CHECK(hidden(with({State::up, Failure::lag, "lagging for 1.000s"})) == "up 50%\n");
  CHECK(hidden(with({State::up, Failure::none, "ok"})) == "up 100%\n");
  ReplyInput drain = with({State::up, Failure::none, "ok"});
  drain.draining = true;
  drain.drain_reason = "drain file /etc/dbcheck/drain present";
  CHECK(hidden(drain) == "drain up\n");
  ReplyInput unknown;
  unknown.known = false;
  unknown.backend = "nope";
  CHECK(hidden(unknown) == "down\n");
}

TEST_CASE("agent replies stay one short printable line", "[agent][reply]") {
  const std::string reply =
      agent_reply(with({State::down, Failure::protocol, "bad\r\nnews " + std::string(500, 'x')}));
  CHECK(reply.size() < 220);
  CHECK(reply.find('\r') == std::string::npos);
  CHECK(reply.find('\n') == reply.size() - 1);
  CHECK(reply.rfind("down #bad  news x", 0) == 0);
}

TEST_CASE("the backend name in an agent-send line", "[agent][server]") {
  CHECK(backend_from_request("pg_write\n") == "pg_write");
  CHECK(backend_from_request("pg_write/pg1\n") == "pg_write");
  CHECK(backend_from_request("  pg_read \r\n") == "pg_read");
  CHECK(backend_from_request("") == "");
  CHECK(backend_from_request("\n") == "");
}

TEST_CASE("logfmt lines quote what needs quoting", "[agent][log]") {
  CHECK(format_event("info", "transition",
                     {{"backend", "pg_write"}, {"reason", "say \"hi\" = x"}, {"empty", ""}},
                     "2026-11-29T00:00:00.000Z") ==
        "time=2026-11-29T00:00:00.000Z level=info msg=transition backend=pg_write reason=\"say "
        "\\\"hi\\\" = x\" empty=\"\"\n");
}
