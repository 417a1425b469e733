// The agent's hysteresis, driven by a fake clock (milliseconds passed in).
#include "dbcheck_catch.hpp"

#include <core/health_tracker.hpp>

#include <vector>

using namespace dbcheck::core;
using dbcheck::util::Duration;

namespace {

const Verdict k_up{State::up, Failure::none, "ok"};
const Verdict k_timeout{State::down, Failure::timeout, "PostgreSQL: timeout"};
const Verdict k_not_primary{State::down, Failure::role, "Patroni names pg2 leader"};
const Verdict k_lag{State::down, Failure::lag, "replica lag 2.000s > max_lag 1.000s"};
const Verdict k_saturated{State::up, Failure::saturated, "saturated"};

struct Step {
  int t_ms;
  Verdict raw;
  State expect;
  bool changed;
};

void run(const TrackerPolicy& policy, const std::vector<Step>& steps) {
  HealthTracker tracker(policy);
  for (const auto& s : steps) {
    CAPTURE(s.t_ms, s.raw.reason);
    const Transition t = tracker.observe(s.raw, Duration{s.t_ms});
    CHECK(tracker.reported().state == s.expect);
    CHECK(t.changed == s.changed);
  }
}

} // namespace

TEST_CASE("the first round sets the state; fall failures to go down, rise passes to come back",
          "[core][tracker]") {
  run(TrackerPolicy{3, 2, Duration{5000}, false},
      {
          {0, k_up, State::up, true},
          {1000, k_timeout, State::up, false},
          {2000, k_up, State::up, false}, // a single failure is forgotten
          {3000, k_timeout, State::up, false},
          {4000, k_timeout, State::down, true},
          {5000, k_up, State::down, false},
          {6000, k_up, State::down, false},
          {7000, k_timeout, State::down, false}, // the count starts again
          {8000, k_up, State::down, false},
          {9000, k_up, State::down, false},
          {10000, k_up, State::up, true},
      });
}

TEST_CASE("a first failing round goes down at once", "[core][tracker]") {
  run(TrackerPolicy{}, {{0, k_timeout, State::down, true}, {1000, k_up, State::down, false}});
}

TEST_CASE("a writer that is definitely not the primary goes down at once", "[core][tracker]") {
  run(TrackerPolicy{3, 2, Duration{5000}, true},
      {{0, k_up, State::up, true}, {1000, k_not_primary, State::down, true}});
  // For a reader the same answer is an ordinary failure.
  run(TrackerPolicy{3, 2, Duration{5000}, false},
      {{0, k_up, State::up, true}, {1000, k_not_primary, State::up, false}});
}

TEST_CASE("another cluster's node goes down at once, writer or reader", "[core][tracker]") {
  const Verdict identity{State::down, Failure::identity, "identity: ..."};
  for (const bool writer : {true, false}) {
    CAPTURE(writer);
    run(TrackerPolicy{3, 2, Duration{5000}, writer},
        {{0, k_up, State::up, true}, {1000, identity, State::down, true}});
  }
}

TEST_CASE("lag must last lag_window before a replica leaves", "[core][tracker]") {
  run(TrackerPolicy{3, 2, Duration{5000}, false},
      {
          {0, k_up, State::up, true},
          {1000, k_lag, State::up, false}, // burst starts
          {3000, k_lag, State::up, false},
          {5999, k_lag, State::up, false}, // 4.999 s
          {6000, k_up, State::up, false},  // burst over: stays in
          {7000, k_lag, State::up, false}, // a new burst starts the window again
          {11000, k_lag, State::up, false},
          {12000, k_lag, State::down, true}, // 5 s: out
          {13000, k_up, State::down, false},
          {14000, k_up, State::down, false},
          {15000, k_up, State::up, true}, // rise 3
      });
}

TEST_CASE("reported reasons say what is pending", "[core][tracker]") {
  HealthTracker t(TrackerPolicy{3, 2, Duration{5000}, false});
  t.observe(k_up, Duration{0});
  t.observe(k_timeout, Duration{1000});
  CHECK(t.reported().reason == "failing, 1 of 2 rounds: PostgreSQL: timeout");
  CHECK(t.reported().failure == Failure::timeout);
  t.observe(k_timeout, Duration{2000});
  CHECK(t.reported().reason == "PostgreSQL: timeout");
  t.observe(k_up, Duration{3000});
  CHECK(t.reported().reason == "recovering, 1 of 3 passing rounds: ok");
  CHECK(t.successes() == 1);
  CHECK(t.changed_at() == Duration{2000});

  HealthTracker r(TrackerPolicy{3, 2, Duration{5000}, false});
  r.observe(k_up, Duration{0});
  r.observe(k_lag, Duration{1000});
  r.observe(k_lag, Duration{2500});
  CHECK(r.reported().state == State::up);
  CHECK(r.reported().failure == Failure::lag);
  CHECK(r.reported().reason ==
        "lagging for 1.500s of lag_window 5.000s: replica lag 2.000s > max_lag 1.000s");
}

TEST_CASE("the pending change as data, the same as the reason says", "[core][tracker]") {
  using Kind = PendingChange::Kind;
  HealthTracker t(TrackerPolicy{3, 2, Duration{5000}, false});
  CHECK(t.pending().kind == Kind::none);
  t.observe(k_up, Duration{0});
  CHECK(t.pending().kind == Kind::none);
  t.observe(k_timeout, Duration{1000});
  auto p = t.pending();
  CHECK(p.kind == Kind::failing);
  CHECK(p.rounds == 1);
  CHECK(p.needed == 2);
  t.observe(k_timeout, Duration{2000}); // down now: settled
  CHECK(t.pending().kind == Kind::none);
  t.observe(k_up, Duration{3000});
  t.observe(k_up, Duration{4000});
  p = t.pending();
  CHECK(p.kind == Kind::recovering);
  CHECK(p.rounds == 2);
  CHECK(p.needed == 3);
  t.observe(k_up, Duration{5000});
  CHECK(t.pending().kind == Kind::none);
  t.observe(k_lag, Duration{6000});
  t.observe(k_lag, Duration{8500});
  p = t.pending();
  CHECK(p.kind == Kind::lagging);
  CHECK(p.lasted == Duration{2500});
  CHECK(p.window == Duration{5000});
  CHECK(to_string(p.kind) == "lagging");
}

TEST_CASE("saturation passes (degraded), it is not a failure", "[core][tracker]") {
  HealthTracker t(TrackerPolicy{});
  t.observe(k_up, Duration{0});
  for (int i = 1; i <= 5; ++i) {
    t.observe(k_saturated, Duration{i * 1000});
  }
  CHECK(t.reported().state == State::up);
  CHECK(t.reported().failure == Failure::saturated);
}

TEST_CASE("falling: up but failing fewer than fall rounds; never while coming back",
          "[core][tracker]") {

  HealthTracker t(TrackerPolicy{3, 2, Duration{5000}, false});
  const Verdict up{State::up, Failure::none, "ok"};
  const Verdict timeout{State::down, Failure::timeout, "timeout"};
  const Verdict lag{State::down, Failure::lag, "lag"};
  CHECK_FALSE(t.falling()); // nothing observed yet
  t.observe(up, Duration{0});
  CHECK_FALSE(t.falling());
  t.observe(timeout, Duration{1000}); // failing 1 of 2
  CHECK(t.reported().state == State::up);
  CHECK(t.falling());
  t.observe(timeout, Duration{1250}); // down
  CHECK(t.reported().state == State::down);
  CHECK_FALSE(t.falling());
  t.observe(up, Duration{1500}); // recovering 1 of 3: rises stay an interval apart
  CHECK_FALSE(t.falling());
  t.observe(up, Duration{2500});
  CHECK_FALSE(t.falling());
  t.observe(up, Duration{3500}); // up
  CHECK(t.reported().state == State::up);
  CHECK_FALSE(t.falling());
  t.observe(lag, Duration{4500}); // lag is damped by time (lag_window), not rounds
  CHECK(t.reported().state == State::up);
  CHECK_FALSE(t.falling());
}

namespace {

// A writer's round, with whom the manager named.
Verdict named(Verdict v, Named who) {
  v.named = who;
  return v;
}

const Verdict k_other_leader = named(k_not_primary, Named::another);
const Verdict k_no_leader =
    named({State::down, Failure::role, "not the writer: Patroni names no leader"}, Named::nobody);
const Verdict k_named_promoting = named(
    {State::down, Failure::role, "not the writer: names this node; PostgreSQL is in recovery"},
    Named::this_node);
const Verdict k_named_unconfirmed = named(
    {State::down, Failure::timeout, "names this node; its own Patroni: timeout"}, Named::this_node);
const Verdict k_named_up = named(k_up, Named::this_node);
const Verdict k_named_timeout = named(k_timeout, Named::this_node);
const TrackerPolicy k_writer{3, 2, Duration{5000}, true, Duration{1000}};

} // namespace

TEST_CASE("a writer moved to may rise by time since the manager's move, not its first pass",
          "[core][tracker]") {
  // The old leader's Patroni killed: its key expires, this node takes it and promotes.
  run(k_writer, {
                    {0, k_other_leader, State::down, true},
                    {1000, k_no_leader, State::down, false},       // 1 of 3
                    {2000, k_named_promoting, State::down, false}, // 2 of 3
                    {3000, k_named_up, State::up, true},           // 3 of 3
                });
  // Only one round since the move: the first pass still waits for the third round.
  run(k_writer, {
                    {0, k_other_leader, State::down, true},
                    {1000, k_named_promoting, State::down, false},
                    {2000, k_named_up, State::down, false},
                    {3000, k_named_up, State::up, true},
                });
}

TEST_CASE("a writer never seen moved from another node rises on passes alone", "[core][tracker]") {
  // Frozen while named (its own Patroni silent), then no leader, then named again: no other
  // node was seen holding the lock, but one may have held it between two rounds (Patroni
  // 3.0.2 re-putting the old key): plain rise.
  run(k_writer, {
                    {0, k_named_unconfirmed, State::down, true},
                    {1000, k_named_unconfirmed, State::down, false},
                    {2000, k_no_leader, State::down, false},
                    {3000, k_no_leader, State::down, false},
                    {4000, k_named_up, State::down, false},
                    {5000, k_named_up, State::down, false},
                    {6000, k_named_up, State::up, true},
                });
  // The sitting writer restarted (named all along): rise damps its flapping as before.
  run(k_writer, {
                    {0, k_named_up, State::up, true},
                    {1000, k_named_timeout, State::up, false},
                    {1250, k_named_timeout, State::down, true},
                    {2250, k_named_up, State::down, false},
                    {3250, k_named_timeout, State::down, false},
                    {4250, k_named_up, State::down, false},
                    {5250, k_named_up, State::down, false},
                    {6250, k_named_up, State::up, true},
                });
}

TEST_CASE("a writer Patroni demoted without its DCS comes back at its first pass",
          "[core][tracker]") {
  // etcd down, failsafe off: Patroni demotes the leader; every member's Patroni says it runs no
  // primary (no_primary) until etcd is back and the manager names this node again.
  const Verdict demoted =
      named({State::down, Failure::role, "asked GET /primary of every member: role replica"},
            Named::no_primary);
  run(k_writer, {
                    {0, k_named_up, State::up, true},
                    {1000, demoted, State::down, true}, // not the primary: at once
                    {2000, demoted, State::down, false},
                    {3000, demoted, State::down, false},
                    {4000, k_named_promoting, State::down, false},
                    {5000, k_named_up, State::up, true},
                });
  // A round that asked no one in between starts the count again.
  const Verdict unread{State::down, Failure::timeout, "no Patroni member answered"};
  run(k_writer, {
                    {0, k_named_up, State::up, true},
                    {1000, demoted, State::down, true},
                    {2000, demoted, State::down, false},
                    {3000, unread, State::down, false},
                    {4000, k_named_promoting, State::down, false},
                    {5000, k_named_up, State::down, false}, // 1 s since: 1 of 3 passes
                    {6000, k_named_up, State::up, true},    // 2 s since
                });
}

TEST_CASE("once up, a writer's later outage rises on passes again", "[core][tracker]") {
  run(k_writer, {
                    {0, k_other_leader, State::down, true},
                    {1000, k_no_leader, State::down, false},
                    {2000, k_named_promoting, State::down, false},
                    {3000, k_named_up, State::up, true}, // moved to: in at once
                    {4000, k_named_timeout, State::up, false},
                    {4250, k_named_timeout, State::down, true},
                    {5250, k_named_up, State::down, false}, // 1 of 3 passes, not 4 rounds
                    {6250, k_named_up, State::down, false},
                    {7250, k_named_up, State::up, true},
                });
}

TEST_CASE("a round naming another writer, or unread, starts the count again", "[core][tracker]") {
  run(k_writer, {
                    {0, k_other_leader, State::down, true},
                    {1000, k_no_leader, State::down, false},
                    {2000, k_other_leader, State::down, false}, // named another: 0
                    {3000, k_no_leader, State::down, false},    // 1
                    {4000, k_named_up, State::down, false},     // 2
                    {5000, k_named_up, State::up, true},        // 3
                });
  run(k_writer, {
                    {0, k_other_leader, State::down, true},
                    {1000, k_no_leader, State::down, false},
                    {2000, k_timeout, State::down, false}, // the manager unread: 0
                    {3000, k_named_up, State::down, false},
                    {4000, k_named_up, State::down, false},
                    {5000, k_named_up, State::up, true},
                });
}

TEST_CASE("the rounds since the manager's move are a writer's rule only", "[core][tracker]") {
  run(TrackerPolicy{3, 2, Duration{5000}, false}, {
                                                      {0, k_other_leader, State::down, true},
                                                      {1000, k_no_leader, State::down, false},
                                                      {2000, k_no_leader, State::down, false},
                                                      {3000, k_named_up, State::down, false},
                                                      {4000, k_named_up, State::down, false},
                                                      {5000, k_named_up, State::up, true},
                                                  });
}

TEST_CASE("a writer's time since the move is time, not rounds", "[core][tracker]") {
  // Rounds every fastinter (another backend of the node falling) do not shorten it.
  run(k_writer, {
                    {0, k_other_leader, State::down, true},
                    {1000, k_named_promoting, State::down, false}, // 0 s
                    {1250, k_named_up, State::down, false},        // 0.25 s
                    {2250, k_named_up, State::down, false},        // 1.25 s < 1.75 s
                    {3250, k_named_up, State::up, true},           // 3 passes (2.25 s)
                });
  // A host frozen mid-count comes back with the count started again.
  run(k_writer, {
                    {0, k_other_leader, State::down, true},
                    {1000, k_no_leader, State::down, false},
                    {2000, k_named_promoting, State::down, false},
                    {32000, k_named_up, State::down, false}, // a 30 s gap: 0 s
                    {33000, k_named_up, State::down, false},
                    {34000, k_named_up, State::up, true}, // 3 passes
                });
  // A quarter interval of jitter between rounds is allowed, no more.
  run(k_writer, {
                    {0, k_other_leader, State::down, true},
                    {1100, k_no_leader, State::down, false},
                    {2000, k_named_promoting, State::down, false},
                    {2900, k_named_up, State::up, true}, // 1.8 s
                });
  run(k_writer, {
                    {0, k_other_leader, State::down, true},
                    {1200, k_no_leader, State::down, false},
                    {2000, k_named_promoting, State::down, false},
                    {2900, k_named_up, State::down, false}, // 1.7 s
                    {3900, k_named_up, State::up, true},
                });
  // Without the agent's interval the rule is off: passes only.
  run(TrackerPolicy{3, 2, Duration{5000}, true}, {
                                                     {0, k_other_leader, State::down, true},
                                                     {1000, k_no_leader, State::down, false},
                                                     {2000, k_named_promoting, State::down, false},
                                                     {3000, k_named_up, State::down, false},
                                                     {4000, k_named_up, State::down, false},
                                                     {5000, k_named_up, State::up, true},
                                                 });
}

TEST_CASE("a writer recovering says which count it waits on", "[core][tracker]") {
  HealthTracker t(k_writer);
  t.observe(k_other_leader, Duration{0});
  CHECK_FALSE(t.since_move());
  t.observe(k_no_leader, Duration{1000});
  CHECK(t.since_move() == Duration{0});
  t.observe(k_named_up, Duration{2000});
  CHECK(t.since_move() == Duration{1000});
  CHECK(t.reported().state == State::down);
  CHECK(t.reported().reason == "recovering, 1 of 3 passing rounds, or 1.000s of 1.750s since "
                               "the manager stopped naming another node: ok");
  t.observe(k_other_leader, Duration{3000});
  CHECK_FALSE(t.since_move());
  // Never moved from another node: passes, as always.
  HealthTracker u(k_writer);
  u.observe(k_named_timeout, Duration{0});
  u.observe(k_named_up, Duration{1000});
  CHECK(u.reported().reason == "recovering, 1 of 3 passing rounds: ok");
}
