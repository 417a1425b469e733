// Verdict tables for Redis/Valkey under Sentinel.
#include "dbcheck_catch.hpp"

#include <core/health_tracker.hpp>
#include <core/redis_verdict.hpp>

using namespace dbcheck::core;
using dbcheck::util::HostPort;

namespace {

const HostPort k_node{"10.0.0.1", 6379};
const HostPort k_other{"10.0.0.2", 6379};

SentinelAnswer says(int i, const HostPort& master, const char* flags = "master",
                    long long info_refresh_ms = 2000) {
  SentinelView v;
  v.master = master;
  v.flags = flags;
  v.config_epoch = 3;
  v.role_reported = "master";
  v.info_refresh_ms = info_refresh_ms;
  return {HostPort{"10.0.0.9", static_cast<std::uint16_t>(26379 + i)}, v};
}

SentinelAnswer says_at(int i, const HostPort& master, long long epoch) {
  SentinelAnswer a = says(i, master);
  a.view->config_epoch = epoch;
  return a;
}

SentinelAnswer down(int i, Failure kind = Failure::timeout) {
  return {HostPort{"10.0.0.9", static_cast<std::uint16_t>(26379 + i)},
          tl::make_unexpected(ProbeError{kind, "timeout: no answer before the deadline", ""})};
}

RedisRole master_role() {
  RedisRole r;
  r.master = true;
  r.offset = 100;
  return r;
}

RedisRole replica_of(const HostPort& m, const char* state = "connected") {
  RedisRole r;
  r.master_addr = m;
  r.link_state = state;
  r.offset = 100;
  return r;
}

using Node = tl::expected<RedisRole, ProbeError>;
Node node_error(Failure kind, const char* detail) {
  return tl::make_unexpected(ProbeError{kind, detail, ""});
}

struct WriterRow {
  const char* name;
  std::vector<SentinelAnswer> sentinels;
  Node node;
  State state;
  Failure failure;
};

} // namespace

TEST_CASE("writer: Sentinel majority x node ROLE", "[core][verdict][redis]") {
  const std::vector<WriterRow> rows = {
      {"3/3 + master",
       {says(0, k_node), says(1, k_node), says(2, k_node)},
       master_role(),
       State::up,
       Failure::none},
      {"2/3 + master",
       {says(0, k_node), says(1, k_node), says(2, k_other)},
       master_role(),
       State::up,
       Failure::none},
      {"2/3 + one down",
       {says(0, k_node), says(1, k_node), down(2)},
       master_role(),
       State::up,
       Failure::none},
      {"1/3 + master (stale old master)",
       {says(0, k_node), says(1, k_other), says(2, k_other)},
       master_role(),
       State::down,
       Failure::role},
      // Only failures to answer stand against it: not a definite "not this node" (damped).
      {"1/3 answered",
       {says(0, k_node), down(1), down(2)},
       master_role(),
       State::down,
       Failure::timeout},
      {"1/3 answered, one refused",
       {says(0, k_node), down(1), down(2, Failure::network)},
       master_role(),
       State::down,
       Failure::network},
      {"one Sentinel listed twice is one vote",
       {says(0, k_node), says(0, k_node), says(1, k_other)},
       master_role(),
       State::down,
       Failure::role},
      {"failover in progress on one Sentinel",
       {says(0, k_node), says(1, k_node), says(2, k_node, "master,failover_in_progress")},
       master_role(),
       State::down,
       Failure::role},
      {"failover in progress, the others time out",
       {says(0, k_node, "master,failover_in_progress"), down(1), down(2)},
       master_role(),
       State::down,
       Failure::role},
      // The failover's leader switched (epoch 4); the others still name the old master.
      {"a stale majority, a newer epoch elsewhere",
       {says(0, k_node), says(1, k_node), says_at(2, k_other, 4)},
       master_role(),
       State::down,
       Failure::role},
      {"the majority is the newer epoch",
       {says_at(0, k_node, 4), says_at(1, k_node, 4), says(2, k_other)},
       master_role(),
       State::up,
       Failure::none},
      {"node says replica, Sentinels time out (role wins)",
       {down(0), down(1), down(2)},
       replica_of(k_other),
       State::down,
       Failure::role},
      {"node times out, Sentinels name another (role wins)",
       {says(0, k_other), says(1, k_other), says(2, k_other)},
       node_error(Failure::timeout, "timeout: no answer before the deadline (connecting)"),
       State::down,
       Failure::role},
      {"all Sentinels time out",
       {down(0), down(1), down(2)},
       master_role(),
       State::down,
       Failure::timeout},
      {"all Sentinels refuse",
       {down(0, Failure::network), down(1, Failure::network), down(2, Failure::network)},
       master_role(),
       State::down,
       Failure::network},
      {"majority but o_down",
       {says(0, k_node, "master,o_down"), says(1, k_node, "master,o_down"), says(2, k_node)},
       master_role(),
       State::down,
       Failure::role},
      {"majority + replica",
       {says(0, k_node), says(1, k_node), says(2, k_node)},
       replica_of(k_other),
       State::down,
       Failure::role},
      {"majority + node timeout",
       {says(0, k_node), says(1, k_node), says(2, k_node)},
       node_error(Failure::timeout, "timeout: no answer before the deadline (connecting)"),
       State::down,
       Failure::timeout},
      {"majority + loading",
       {says(0, k_node), says(1, k_node), says(2, k_node)},
       node_error(Failure::not_ready, "LOADING Redis is loading the dataset in memory"),
       State::down,
       Failure::not_ready},
      {"majority + wrong password",
       {says(0, k_node), says(1, k_node), says(2, k_node)},
       node_error(Failure::auth, "WRONGPASS invalid username-password pair or user is disabled."),
       State::down,
       Failure::auth},
      {"majority + max clients",
       {says(0, k_node), says(1, k_node), says(2, k_node)},
       node_error(Failure::saturated, "ERR max number of clients reached"),
       State::up,
       Failure::saturated},
      // The node refused the check: only the Sentinels' own recent INFO says it is master.
      {"majority + max clients, Sentinels' INFO stale",
       {says(0, k_node, "master", 30000), says(1, k_node, "master", 30000), says(2, k_node)},
       node_error(Failure::saturated, "ERR max number of clients reached"),
       State::down,
       Failure::saturated},
      {"minority + max clients",
       {says(0, k_other), says(1, k_other), says(2, k_node)},
       node_error(Failure::saturated, "ERR max number of clients reached"),
       State::down,
       Failure::role},
  };
  const Verdict was_up = evaluate_redis_writer(
      RedisObservation{k_node, rows.front().sentinels, 3, master_role(), {}}, SaturationPolicy::up);
  REQUIRE(passes(was_up));
  for (const auto& row : rows) {
    CAPTURE(row.name);
    const RedisObservation obs{k_node, row.sentinels, 3, row.node, {}};
    const Verdict v = evaluate_redis_writer(obs, SaturationPolicy::up);
    CHECK(v.state == row.state);
    CHECK(v.failure == row.failure);
    // "not the writer" only when an opinion says so: a node that cannot be asked has not.
    CHECK((v.reason.rfind("not the writer: ", 0) == 0) == (v.failure == Failure::role));
    // Through the agent's tracker: "not this node" leaves at once, uncertainty after fall.
    HealthTracker t(TrackerPolicy{3, 2, dbcheck::util::Duration{5000}, true});
    t.observe(was_up, dbcheck::util::Duration{0});
    t.observe(v, dbcheck::util::Duration{1000});
    const bool leaves_now = !passes(v) && v.failure == Failure::role;
    CHECK((t.reported().state == State::down) == leaves_now);
    t.observe(v, dbcheck::util::Duration{2000});
    CHECK(t.reported().state == v.state);
  }
}

TEST_CASE("writer reasons say who said what", "[core][verdict][redis]") {
  const RedisObservation ok{
      k_node, {says(0, k_node), says(1, k_node), down(2)}, 3, master_role(), {}};
  CHECK(evaluate_redis_writer(ok, SaturationPolicy::up).reason ==
        "2 of 3 Sentinels name this node master (need 2); Redis ROLE says master");
  const RedisObservation stale{
      k_node, {says(0, k_node), says(1, k_other), says(2, k_other)}, 3, master_role(), {}};
  CHECK(evaluate_redis_writer(stale, SaturationPolicy::up).reason ==
        "not the writer: Sentinels: 1 of 3 name this node master, need 2 (10.0.0.9:26379 names "
        "10.0.0.1:6379 (epoch 3, flags master); 10.0.0.9:26380 names 10.0.0.2:6379 (epoch 3, "
        "flags master); 10.0.0.9:26381 names 10.0.0.2:6379 (epoch 3, flags master)); Redis ROLE "
        "says master");
  const RedisObservation sat{k_node,
                             {says(0, k_node), says(1, k_node), says(2, k_node)},
                             3,
                             node_error(Failure::saturated, "ERR max number of clients reached"),
                             {}};
  CHECK(evaluate_redis_writer(sat, SaturationPolicy::down).reason ==
        "saturated: 3 of 3 Sentinels name this node master (need 2); Redis full: ERR max number "
        "of clients reached; on_saturation=down");
  // A master whose write probe is refused (or whose PING is, for MISCONF) cannot take writes.
  RedisObservation full{
      k_node, {says(0, k_node), says(1, k_node), says(2, k_node)}, 3, master_role(), {}};
  full.write = {WriteProbe::Outcome::refused,
                "OOM command not allowed when used memory > 'maxmemory'."};
  const Verdict refused = evaluate_redis_writer(full, SaturationPolicy::up);
  CHECK(refused.state == State::down);
  CHECK(refused.failure == Failure::unwritable);
  CHECK(refused.reason ==
        "Redis ROLE says master but it refuses writes: OOM command not allowed when used memory > "
        "'maxmemory'.; 3 of 3 Sentinels name this node master (need 2)");
  // A refusal that arrives in place of the node's answer is classified the same way.
  const RedisObservation misconf{
      k_node,
      {says(0, k_node), says(1, k_node), says(2, k_node)},
      3,
      tl::make_unexpected(classify_redis_error(
          "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to "
          "persist to disk.")),
      {}};
  CHECK(evaluate_redis_writer(misconf, SaturationPolicy::up).failure == Failure::unwritable);
  CHECK(evaluate_redis_writer(misconf, SaturationPolicy::up).reason ==
        "Redis refuses writes: MISCONF Redis is configured to save RDB snapshots, but it's "
        "currently unable to persist to disk.; 3 of 3 Sentinels name this node master (need 2)");
  // The Sentinels naming another master outrank it: not the writer, whatever it can do.
  RedisObservation elsewhere{
      k_node, {says(0, k_other), says(1, k_other), says(2, k_node)}, 3, master_role(), {}};
  elsewhere.write = full.write;
  CHECK(evaluate_redis_writer(elsewhere, SaturationPolicy::up).failure == Failure::role);
  // Accepted, or a probe the check user may not send: judged on the two opinions.
  RedisObservation taken = full;
  taken.write = {WriteProbe::Outcome::accepted, ""};
  CHECK(evaluate_redis_writer(taken, SaturationPolicy::up).reason ==
        "3 of 3 Sentinels name this node master (need 2); Redis ROLE says master and it accepts "
        "writes");
  RedisObservation unprobed = full;
  unprobed.write = {WriteProbe::Outcome::unknown,
                    "NOPERM User healthcheck has no permissions to run the 'lpushx' command"};
  const Verdict v = evaluate_redis_writer(unprobed, SaturationPolicy::up);
  CHECK(v.state == State::up);
  CHECK(v.failure == Failure::none);
  CHECK(v.reason ==
        "3 of 3 Sentinels name this node master (need 2); Redis ROLE says master (writes not "
        "probed: NOPERM User healthcheck has no permissions to run the 'lpushx' command; grant "
        "+lpushx ~dbcheck:write-probe or set write_probe = false)");
  const RedisObservation wrongpass{
      k_node,
      {says(0, k_node), says(1, k_node), says(2, k_node)},
      3,
      tl::make_unexpected(
          classify_redis_error("WRONGPASS invalid username-password pair or user is disabled.")),
      {}};
  CHECK(evaluate_redis_writer(wrongpass, SaturationPolicy::up).reason ==
        "cannot log in to Redis: WRONGPASS invalid username-password pair or user is disabled.; "
        "3 of 3 Sentinels name this node master (need 2)");
  const RedisObservation unanswered{k_node, {down(0), down(1), down(2)}, 3, master_role(), {}};
  CHECK(evaluate_redis_writer(unanswered, SaturationPolicy::up).reason ==
        "Sentinels timed out: 0 of 3 name this node master, need 2 (10.0.0.9:26379: timeout: no "
        "answer before the deadline; 10.0.0.9:26380: timeout: no answer before the deadline; "
        "10.0.0.9:26381: timeout: no answer before the deadline); Redis ROLE says master");
  const RedisObservation failing{
      k_node,
      {says(0, k_node), says(1, k_node), says(2, k_node, "master,failover_in_progress")},
      3,
      master_role(),
      {}};
  CHECK(evaluate_redis_writer(failing, SaturationPolicy::up).reason ==
        "not the writer: Sentinel 10.0.0.9:26381 is failing the master over: no writer until the "
        "failover ends (10.0.0.9:26379 names 10.0.0.1:6379 (epoch 3, flags master); "
        "10.0.0.9:26380 names 10.0.0.1:6379 (epoch 3, flags master); 10.0.0.9:26381 names "
        "10.0.0.1:6379 (epoch 3, flags master,failover_in_progress): not counted); Redis ROLE "
        "says master");
}

TEST_CASE("reader: each condition decides, with its reason", "[core][verdict][redis]") {
  const std::vector<SentinelAnswer> majority_other = {says(0, k_other), says(1, k_other),
                                                      says(2, k_other)};
  const LagEstimate fresh{0.003,
                          "processed past the master's replication offset sampled 0.003s earlier"};
  struct Row {
    const char* name;
    RedisObservation obs;
    State state;
    Failure failure;
    const char* reason;
  };
  const std::vector<Row> rows = {
      {"node refused",
       {k_node, majority_other, 3, node_error(Failure::network, "Connection refused (connecting)"),
        fresh},
       State::down,
       Failure::network,
       "cannot reach Redis: Connection refused (connecting)"},
      {"a master",
       {k_node, majority_other, 3, master_role(), fresh},
       State::down,
       Failure::role,
       "Redis ROLE says master, not a replica"},
      {"no majority",
       {k_node, {says(0, k_other), down(1), down(2)}, 3, replica_of(k_other), fresh},
       State::down,
       Failure::role,
       "Sentinels: no master is named by 2 of 3 (10.0.0.9:26379 names 10.0.0.2:6379 (epoch 3, "
       "flags master); 10.0.0.9:26380: timeout: no answer before the deadline; 10.0.0.9:26381: "
       "timeout: no answer before the deadline)"},
      {"wrong master",
       {k_node, majority_other, 3, replica_of(HostPort{"10.0.0.3", 6379}), fresh},
       State::down,
       Failure::role,
       "replicates from 10.0.0.3:6379, but 3 of 3 Sentinels name 10.0.0.2:6379 master"},
      {"full sync",
       {k_node, majority_other, 3, replica_of(k_other, "sync"), fresh},
       State::down,
       Failure::not_ready,
       "replica not ready: a full sync is in progress"},
      {"link down",
       {k_node, majority_other, 3, replica_of(k_other, "connecting"), fresh},
       State::down,
       Failure::not_ready,
       "replica not ready: its link to the master is connecting"},
      {"lag unknown",
       {k_node, majority_other, 3, replica_of(k_other),
        LagEstimate{std::nullopt, "still 4096 bytes behind the master's replication offset after "
                                  "0.785s; Redis keeps no replay timestamp to bound it otherwise"}},
       State::down,
       Failure::lag,
       "replica lag cannot be bounded: still 4096 bytes behind the master's replication offset "
       "after 0.785s; Redis keeps no replay timestamp to bound it otherwise"},
      {"lag too high",
       {k_node, majority_other, 3, replica_of(k_other), LagEstimate{2.5, "x"}},
       State::down,
       Failure::lag,
       "replica lag 2.500s > max_lag 2.000s (x)"},
      {"fresh",
       {k_node, majority_other, 3, replica_of(k_other), fresh},
       State::up,
       Failure::none,
       "replica of 10.0.0.2:6379 (connected), lag <= 0.003s (max_lag 2.000s): processed past the "
       "master's replication offset sampled 0.003s earlier"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.name);
    const Verdict v = evaluate_redis_replica(row.obs, 2.0);
    CHECK(v.state == row.state);
    CHECK(v.failure == row.failure);
    CHECK(v.reason == row.reason);
  }
}

TEST_CASE("writer: Sentinel rounds leave the agent's rise on passes", "[core][verdict][redis]") {
  // Sentinel promotes before it names the new master, so a majority first names a node that
  // already passes: no rounds to count from the move (core/health_tracker.hpp), whom it names.
  for (const auto& obs :
       {RedisObservation{k_node,
                         {says(0, k_node), says(1, k_node), says(2, k_other)},
                         3,
                         replica_of(k_other),
                         {}},
        RedisObservation{
            k_node, {says(0, k_other), says(1, k_other), says(2, k_node)}, 3, master_role(), {}},
        RedisObservation{
            k_node, {says(0, k_node), says(1, k_node), says(2, k_node)}, 3, master_role(), {}}}) {
    CHECK(evaluate_redis_writer(obs, SaturationPolicy::up).named == Named::unknown);
  }
}
