// The latency bound (core/latency_bound.hpp), one row per case, and how the agent's damping
// treats what it returns.
#include "dbcheck_catch.hpp"

#include <core/health_tracker.hpp>
#include <core/latency_bound.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace dbcheck::core;
using dbcheck::util::Duration;

namespace {

const Verdict k_reader_up{State::up, Failure::none, "replica lag 0.2 s"};
const Verdict k_writer_up{State::up, Failure::none, "primary, read-write", Named::this_node};
const Verdict k_writer_saturated{State::up, Failure::saturated, "saturated: 47 of 47"};
const Verdict k_not_writer{State::down, Failure::role, "Patroni names pg2 leader"};
const Verdict k_reader_lagging{State::down, Failure::lag, "replica lag 2.0 s > max_lag 1.0 s"};

struct Row {
  std::string what;
  Verdict in;
  LatencyObservation seen;
  State state;
  Failure failure;
  std::string reason;
};

} // namespace

TEST_CASE("the latency bound: a slow reader leaves, a slow writer stays up and says so",
          "[core][latency]") {
  const std::vector<Row> rows = {
      {"reader within the bound",
       k_reader_up,
       {true, 120.0, 300.0},
       State::up,
       Failure::none,
       "replica lag 0.2 s"},
      {"reader exactly at the bound",
       k_reader_up,
       {true, 300.0, 300.0},
       State::up,
       Failure::none,
       "replica lag 0.2 s"},
      {"reader slower than the bound",
       k_reader_up,
       {true, 612.4, 300.0},
       State::down,
       Failure::slow,
       "slow: the node answered in 612 ms, max_latency 300 ms (replica lag 0.2 s)"},
      {"reader just past the bound: the time is not rounded onto it",
       k_reader_up,
       {true, 300.3, 300.0},
       State::down,
       Failure::slow,
       "slow: the node answered in 300.3 ms, max_latency 300 ms (replica lag 0.2 s)"},
      {"writer slower than the bound stays up, degraded",
       k_writer_up,
       {false, 612.0, 300.0},
       State::up,
       Failure::slow,
       "slow: the node answered in 612 ms, max_latency 300 ms (primary, read-write)"},
      {"a saturated writer that is slow too: slow leads, saturation still said",
       k_writer_saturated,
       {false, 450.0, 300.0},
       State::up,
       Failure::slow,
       "slow: the node answered in 450 ms, max_latency 300 ms (saturated: 47 of 47)"},
      {"a writer already down keeps its own class",
       k_not_writer,
       {false, 612.0, 300.0},
       State::down,
       Failure::role,
       "Patroni names pg2 leader"},
      {"a reader already down keeps its own class",
       k_reader_lagging,
       {true, 612.0, 300.0},
       State::down,
       Failure::lag,
       "replica lag 2.0 s > max_lag 1.0 s"},
      {"no max_latency: no bound",
       k_reader_up,
       {true, 612.0, std::nullopt},
       State::up,
       Failure::none,
       "replica lag 0.2 s"},
      {"the node never answered: its failure says why, not the bound",
       k_reader_up,
       {true, std::nullopt, 300.0},
       State::up,
       Failure::none,
       "replica lag 0.2 s"},
  };
  for (const Row& r : rows) {
    CAPTURE(r.what);
    const Verdict out = bound_latency(r.in, r.seen);
    CHECK(out.state == r.state);
    CHECK(out.failure == r.failure);
    CHECK(out.reason == r.reason);
    CHECK(out.named == r.in.named);
  }
}

TEST_CASE("the node's answer time is its node step's, and only when it answered",
          "[core][latency]") {
  Report r;
  r.steps = {Step{"manager", "http://10.0.0.1:8008", "GET /cluster", "leader pg1", 700.0},
             Step{"primary_sample", "10.0.0.1:5432", "SELECT ...", "0/3000060", 40.0},
             Step{"node", "10.0.0.2:5432", "SELECT ...", "replica, streaming", 12.5}};
  CHECK_FALSE(node_answer_ms(r).has_value());
  r.node_answered = true;
  REQUIRE(node_answer_ms(r).has_value());
  CHECK(*node_answer_ms(r) == 12.5);
  r.steps.pop_back();
  CHECK_FALSE(node_answer_ms(r).has_value());
}

TEST_CASE("one slow answer among fast ones does not take a reader out under fall 2",
          "[core][latency][tracker]") {
  const auto reader = [](double ms) { return bound_latency(k_reader_up, {true, ms, 300.0}); };
  HealthTracker t(TrackerPolicy{3, 2, Duration{5000}, false});
  t.observe(reader(20), Duration{0});
  t.observe(reader(650), Duration{1000});
  CHECK(t.reported().state == State::up);
  CHECK(t.reported().failure == Failure::slow);
  t.observe(reader(25), Duration{2000});
  CHECK(t.reported().state == State::up);
  t.observe(reader(640), Duration{3000});
  CHECK(t.reported().state == State::up);
  t.observe(reader(660), Duration{4000}); // two in a row: out, like any other failure
  CHECK(t.reported().state == State::down);
  CHECK(t.reported().failure == Failure::slow);
  t.observe(reader(20), Duration{5000});
  t.observe(reader(20), Duration{6000});
  CHECK(t.reported().state == State::down); // and back after rise passes
  t.observe(reader(20), Duration{7000});
  CHECK(t.reported().state == State::up);
}

TEST_CASE("a slow writer that is up counts as a pass in the tracker, as a saturated one does",
          "[core][latency][tracker]") {
  TrackerPolicy policy{3, 2, Duration{5000}, true};
  HealthTracker t(policy);
  for (int i = 0; i < 5; ++i) {
    t.observe(bound_latency(k_writer_up, {false, 700.0, 300.0}), Duration{i * 1000});
    CHECK(t.reported().state == State::up);
    CHECK(t.reported().failure == Failure::slow);
    CHECK(t.failures() == 0);
  }
}
