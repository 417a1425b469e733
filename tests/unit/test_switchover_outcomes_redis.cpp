// Every way a Redis switchover ends, through scripted peers (fake_peers.hpp), one row per
// outcome: the result, and the state the run left the cluster in as the fakes recorded it (was
// the old master unpaused, demoted, left paused; was SENTINEL FAILOVER sent). Time is the fakes'
// virtual clock, so a run that waits out its deadline takes no real time.
#include "dbcheck_catch.hpp"
#include "fake_peers.hpp"
#include "temp_dir.hpp"

#include <switchover/switchover.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

using namespace dbcheck;
using testing::FakePeers;
using R = core::RespValue;
using Phase = switchover::SwitchoverPhase;

namespace {

const util::HostPort k_old{"10.0.0.1", 6379};
const util::HostPort k_new{"10.0.0.2", 6379};
constexpr const char* k_demoted = "10.0.0.2 6379"; // REPLICAOF's arguments, following k_new

// What the Sentinels do with SENTINEL FAILOVER.
enum class FailoverAnswer {
  accept,     // OK
  lose,       // accepted, but the reply never arrives (a network error after sending)
  refuse_all, // -ERR from every Sentinel
  no_good,    // -NOGOODSLAVE from every Sentinel: no replica it would promote
  in_progress // -INPROG from every Sentinel: a failover not the run's is under way, and
              // (if `promotes`) names the replica after k_looks_under_way more looks
};

// When the run is asked to stop (as SIGTERM would).
enum class Signal { none, once_paused, once_replica_asked, once_failover_taken };

// How the replica (10.0.0.2) follows the old master's replication offset (1000) once paused.
enum class Replica {
  caught_up,  // at 1000 from the first look
  catches_up, // at 900 for the first k_looks_behind looks, then at 1000
  never,      // at 900 for ever
  unreachable // every connection refused
};
constexpr int k_looks_behind = 3;
constexpr int k_looks_under_way = 6; // GET-MASTER-ADDR-BY-NAMEs before it names the replica

// One Redis scenario: how the peers behave.
struct RedisScript {
  FailoverAnswer failover = FailoverAnswer::accept;
  bool promotes = true;                    // a FAILOVER taken makes 10.0.0.2 the master
  bool sentinels_fail_once_paused = false; // every Sentinel unreachable after CLIENT PAUSE
  Signal signal = Signal::none;
  Replica replica = Replica::caught_up;
};

// The Redis cluster as the fakes see it, changed by what the switchover sends.
struct RedisWorld {
  explicit RedisWorld(RedisScript s) : script(s) {}
  const RedisScript script;
  std::mutex mutex;
  bool paused = false;
  int pauses = 0;
  int unpauses = 0;
  int failovers_asked = 0;
  int failovers_taken = 0;              // accepted, reply delivered or not
  int replica_roles = 0;                // ROLE asked on the replica while it is one
  int replica_roles_at_failover = -1;   // replica_roles when the first FAILOVER was asked
  std::optional<std::string> replicaof; // "host port" given to REPLICAOF on the old master
  bool promoted = false;
  bool under_way = false;          // a failover not the run's was met (-INPROG answered)
  int looks_under_way = 0;         // GET-MASTER-ADDR-BY-NAMEs since
  bool unpaused_as_master = false; // CLIENT UNPAUSE came before any REPLICAOF
};

R ok() {
  return R::status("OK");
}

std::vector<R> sentinel_replies(RedisWorld& w, const std::vector<probe::RedisCommand>& cmds,
                                bool& lost) {
  std::vector<R> out;
  for (const auto& c : cmds) {
    if (c[0] == "AUTH") {
      out.push_back(ok());
    } else if (c.at(1) == "GET-MASTER-ADDR-BY-NAME") {
      if (w.under_way && ++w.looks_under_way > k_looks_under_way) {
        w.promoted = w.script.promotes;
      }
      out.push_back(R::array({R::string(w.promoted ? "10.0.0.2" : "10.0.0.1"), R::string("6379")}));
    } else if (c.at(1) == "MASTER") {
      out.push_back(R::array({R::string("name"), R::string("mymaster"), R::string("flags"),
                              R::string("master"), R::string("config-epoch"),
                              R::string(w.promoted ? "4" : "3")}));
    } else if (c.at(1) == "REPLICAS") {
      out.push_back(R::array({R::array({R::string("ip"), R::string("10.0.0.2"), R::string("port"),
                                        R::string("6379"), R::string("flags"), R::string("slave"),
                                        R::string("master-link-status"), R::string("ok")})}));
    } else if (c.at(1) == "FAILOVER") {
      if (w.failovers_asked++ == 0) {
        w.replica_roles_at_failover = w.replica_roles;
      }
      if (w.script.failover == FailoverAnswer::refuse_all) {
        out.push_back(R::error("ERR No such master with that name"));
        continue;
      }
      if (w.script.failover == FailoverAnswer::no_good) {
        out.push_back(R::error("NOGOODSLAVE No suitable replica to promote"));
        continue;
      }
      if (w.script.failover == FailoverAnswer::in_progress) {
        w.under_way = true;
        out.push_back(R::error("INPROG Failover already in progress"));
        continue;
      }
      ++w.failovers_taken;
      w.promoted = w.script.promotes;
      lost = w.script.failover == FailoverAnswer::lose;
      out.push_back(ok());
    } else {
      out.push_back(R::error("ERR unknown command"));
    }
  }
  return out;
}

std::vector<R> old_master_replies(RedisWorld& w, const std::vector<probe::RedisCommand>& cmds) {
  std::vector<R> out;
  for (const auto& c : cmds) {
    if (c[0] == "CLIENT" && c.at(1) == "PAUSE") {
      w.paused = true;
      ++w.pauses;
      out.push_back(ok());
    } else if (c[0] == "CLIENT" && c.at(1) == "UNPAUSE") {
      w.paused = false;
      ++w.unpauses;
      w.unpaused_as_master = w.unpaused_as_master || !w.replicaof;
      out.push_back(ok());
    } else if (c[0] == "REPLICAOF") {
      w.replicaof = c.at(1) + " " + c.at(2);
      out.push_back(ok());
    } else if (c[0] == "ROLE") {
      out.push_back(w.replicaof
                        ? R::array({R::string("slave"), R::string("10.0.0.2"), R::number(6379),
                                    R::string("connected"), R::number(1000)})
                        : R::array({R::string("master"), R::number(1000), R::array({})}));
    } else if (c[0] == "PING") {
      out.push_back(R::status("PONG"));
    } else {
      out.push_back(ok()); // AUTH
    }
  }
  return out;
}

std::vector<R> new_master_replies(RedisWorld& w, const std::vector<probe::RedisCommand>& cmds) {
  std::vector<R> out;
  for (const auto& c : cmds) {
    if (c[0] == "ROLE" && !w.promoted) {
      ++w.replica_roles;
      const bool behind =
          w.script.replica == Replica::never ||
          (w.script.replica == Replica::catches_up && w.replica_roles <= k_looks_behind);
      out.push_back(R::array({R::string("slave"), R::string("10.0.0.1"), R::number(6379),
                              R::string("connected"), R::number(behind ? 900 : 1000)}));
    } else if (c[0] == "ROLE") {
      out.push_back(R::array({R::string("master"), R::number(1000), R::array({})}));
    } else if (c[0] == "PING") {
      out.push_back(R::status("PONG"));
    } else {
      out.push_back(ok());
    }
  }
  return out;
}

config::RedisCluster redis_cluster(const std::string& password_file) {
  config::RedisCluster c;
  c.name = "cache";
  c.master_name = "mymaster";
  c.sentinels = {{"10.0.1.1", 26379}, {"10.0.1.2", 26379}, {"10.0.1.3", 26379}};
  c.operator_user = "op";
  c.operator_password_file = password_file;
  return c;
}

// Peers that answer as `world` says, and change it as the switchover acts.
std::shared_ptr<FakePeers> redis_lab(const std::shared_ptr<RedisWorld>& world) {
  auto f = std::make_shared<FakePeers>();
  for (const auto& s : redis_cluster("").sentinels) {
    f->redis_answers[util::to_string(s)] = [world](const std::vector<probe::RedisCommand>& cmds)
        -> tl::expected<std::vector<R>, core::ProbeError> {
      std::lock_guard lock(world->mutex);
      if (world->script.sentinels_fail_once_paused && world->pauses > 0) {
        return tl::make_unexpected(
            core::ProbeError{core::Failure::network, "connection refused", ""});
      }
      bool lost = false;
      auto replies = sentinel_replies(*world, cmds, lost);
      if (lost) {
        return tl::make_unexpected(
            core::ProbeError{core::Failure::timeout, "no reply before the deadline", ""});
      }
      return replies;
    };
  }
  f->redis_answers[util::to_string(k_old)] = [world](const std::vector<probe::RedisCommand>& c) {
    std::lock_guard lock(world->mutex);
    return old_master_replies(*world, c);
  };
  f->redis_answers[util::to_string(k_new)] = [world](const std::vector<probe::RedisCommand>& c)
      -> tl::expected<std::vector<R>, core::ProbeError> {
    std::lock_guard lock(world->mutex);
    if (world->script.replica == Replica::unreachable) {
      return tl::make_unexpected(
          core::ProbeError{core::Failure::network, "connection refused", ""});
    }
    return new_master_replies(*world, c);
  };
  return f;
}

// One row: a scenario and everything it must end with.
struct RedisRow {
  const char* outcome;
  RedisScript script;
  std::optional<Phase> failed;        // none: the switchover succeeded
  const char* error;                  // part of the error ("" when it succeeded)
  bool interrupted;                   // interrupted_by "SIGTERM"
  int failovers_taken;                // SENTINEL FAILOVERs a Sentinel took
  bool failover_asked;                // any SENTINEL FAILOVER sent at all
  std::optional<std::string> demoted; // REPLICAOF given to the old master
  int unpauses;                       // CLIENT UNPAUSE sent to the old master
  bool left_paused;                   // still paused at the end, and the result says so
  int replica_roles_at_failover;      // ROLE looks at the replica before FAILOVER; -1: none sent
};

} // namespace

TEST_CASE("every Redis switchover outcome, and what it leaves behind", "[switchover][redis]") {
  // clang-format off
  const RedisRow row = GENERATE(values<RedisRow>({
      // outcome; {FAILOVER answer, promotes, Sentinels fail once paused, signal, replica};
      // failed phase, error part, interrupted, FAILOVERs taken, any asked, REPLICAOF,
      // UNPAUSEs, left paused, looks at the replica's offset before FAILOVER
      {"happy path: replica caught up, promoted, old master demoted and unpaused",
       {FailoverAnswer::accept, true, false, Signal::none, Replica::caught_up},
       std::nullopt, "", false, 1, true, k_demoted, 1, false, 1},
      {"the replica catches up after a few looks: FAILOVER only then",
       {FailoverAnswer::accept, true, false, Signal::none, Replica::catches_up},
       std::nullopt, "", false, 1, true, k_demoted, 1, false, k_looks_behind + 1},
      {"the replica never catches up: FAILOVER never sent, unpaused as the master it still is",
       {FailoverAnswer::accept, true, false, Signal::none, Replica::never},
       Phase::pause,
       "not every replica Sentinel may promote reached 10.0.0.1:6379's replication offset 1000 "
       "after waiting 5.0s: 10.0.0.2:6379 at offset 900 of the master's 1000; SENTINEL FAILOVER "
       "not sent, as promoting it could lose acknowledged writes; 10.0.0.1:6379 is still the "
       "master (SENTINEL FAILOVER was not sent); writes on it unpaused",
       false, 0, false, std::nullopt, 1, false, -1},
      {"the replica cannot be asked: not caught up, FAILOVER never sent, unpaused",
       {FailoverAnswer::accept, true, false, Signal::none, Replica::unreachable},
       Phase::pause, "after waiting 5.0s: 10.0.0.2:6379 not asked (connection refused)", false,
       0, false, std::nullopt, 1, false, -1},
      {"FAILOVER reply lost, the Sentinel took it: taken as accepted, never sent again",
       {FailoverAnswer::lose, true, false, Signal::none, Replica::caught_up},
       std::nullopt, "", false, 1, true, k_demoted, 1, false, 1},
      {"FAILOVER refused by every Sentinel: unpaused as the master it still is",
       {FailoverAnswer::refuse_all, true, false, Signal::none, Replica::caught_up},
       Phase::request, "no Sentinel accepted the failover", false, 0, true, std::nullopt, 1,
       false, 1},
      {"FAILOVER answered -NOGOODSLAVE: a refusal, unpaused as the master it still is",
       {FailoverAnswer::no_good, true, false, Signal::none, Replica::caught_up},
       Phase::request,
       "no Sentinel accepted the failover: 10.0.1.3:26379: SENTINEL FAILOVER: NOGOODSLAVE No "
       "suitable replica to promote; 10.0.0.1:6379 is still the master (SENTINEL FAILOVER was "
       "not sent); writes on it unpaused",
       false, 0, true, std::nullopt, 1, false, 1},
      {"FAILOVER answered -INPROG, the majority then names the replica: as a lost reply, "
       "demoted before unpaused",
       {FailoverAnswer::in_progress, true, false, Signal::none, Replica::caught_up},
       std::nullopt, "", false, 0, true, k_demoted, 1, false, 1},
      {"FAILOVER answered -INPROG, no new master named: left paused, never unpaused as master",
       {FailoverAnswer::in_progress, false, false, Signal::none, Replica::caught_up},
       Phase::confirm, "no new master confirmed before the deadline", false, 0, true,
       std::nullopt, 0, true, 1},
      {"no Sentinel majority after the pause: FAILOVER never sent, unpaused",
       {FailoverAnswer::accept, true, true, Signal::none, Replica::caught_up},
       Phase::request, "no Sentinel majority names 10.0.0.1:6379 now", false, 0, false,
       std::nullopt, 1, false, -1},
      {"a signal while the replica catches up: unpaused as the master it still is",
       {FailoverAnswer::accept, true, false, Signal::once_paused, Replica::caught_up},
       Phase::pause, "interrupted by SIGTERM; 10.0.0.1:6379 is still the master", true, 0,
       false, std::nullopt, 1, false, -1},
      {"a signal before FAILOVER: unpaused as the master it still is",
       {FailoverAnswer::accept, true, false, Signal::once_replica_asked, Replica::caught_up},
       Phase::request, "interrupted by SIGTERM; 10.0.0.1:6379 is still the master", true, 0,
       false, std::nullopt, 1, false, -1},
      {"a signal after FAILOVER: demoted to the new master, then unpaused",
       {FailoverAnswer::accept, true, false, Signal::once_failover_taken, Replica::caught_up},
       Phase::confirm, "interrupted by SIGTERM; 10.0.0.1:6379 is demoted", true, 1, true,
       k_demoted, 1, false, 1},
      {"the new master never confirmed within the deadline: left paused",
       {FailoverAnswer::accept, false, false, Signal::none, Replica::caught_up},
       Phase::confirm, "no new master confirmed before the deadline", false, 1, true,
       std::nullopt, 0, true, 1},
  }));
  // clang-format on
  INFO(row.outcome);

  const testing::TempDir dir;
  const auto cluster = redis_cluster(dir.write("operator.pw", "secret\n", 0600));
  auto world = std::make_shared<RedisWorld>(row.script);
  auto peers = redis_lab(world);
  switchover::SwitchoverOptions options;
  options.timeout = util::Duration{20000};
  options.interrupted = [world]() -> std::optional<std::string> {
    std::lock_guard lock(world->mutex);
    const bool stop =
        (world->script.signal == Signal::once_paused && world->pauses > 0) ||
        (world->script.signal == Signal::once_replica_asked && world->replica_roles > 0) ||
        (world->script.signal == Signal::once_failover_taken && world->failovers_taken > 0);
    return stop ? std::optional<std::string>{"SIGTERM"} : std::nullopt;
  };
  std::string requested; // what the request phase ended with, once it did
  const auto progress = [&requested](const switchover::SwitchoverEvent& e) {
    if (e.phase == Phase::request && e.finished && e.ok) {
      requested = e.text;
    }
  };
  const auto r = switchover::run_switchover(config::Cluster{cluster}, options, progress, peers);
  REQUIRE(testing::settled(peers));

  CAPTURE(r.error);
  if (row.script.failover == FailoverAnswer::in_progress) {
    CHECK_THAT(requested, dbcheck_test::Contains("INPROG Failover already in progress: a failover "
                                                 "of 10.0.0.1:6379 was already in progress"));
    if (row.left_paused) {
      CHECK_THAT(r.advice, dbcheck_test::Contains("a failover of it was already in progress"));
    }
  }
  CHECK(r.ok == !row.failed);
  CHECK(r.failed == row.failed);
  CHECK_THAT(r.error, dbcheck_test::Contains(row.error));
  CHECK(r.interrupted_by ==
        (row.interrupted ? std::optional<std::string>{"SIGTERM"} : std::nullopt));
  CHECK(r.old_primary == "10.0.0.1:6379");
  CHECK(r.left_paused == row.left_paused);
  CHECK(r.advice.empty() == !row.left_paused);
  if (!row.failed) {
    CHECK(r.new_primary == "10.0.0.2:6379");
  }
  std::lock_guard lock(world->mutex);
  CHECK(world->pauses == 1);
  CHECK(world->failovers_taken == row.failovers_taken);
  CHECK((world->failovers_asked > 0) == row.failover_asked);
  CHECK(world->replicaof == row.demoted);
  CHECK(world->unpauses == row.unpauses);
  CHECK(world->paused == row.left_paused);
  CHECK(world->replica_roles_at_failover == row.replica_roles_at_failover);
  // Whenever a failover was or may have been under way, writes were released on a replica only.
  if (row.demoted || row.left_paused) {
    CHECK_FALSE(world->unpaused_as_master);
  }
}
