// The Redis checks' own rules, through scripted peers (fake_peers.hpp): the majority's master
// sampled before the replica is read, the ROLE watch, and Sentinels abandoned at the deadline.
#include "dbcheck_catch.hpp"
#include "fake_peers.hpp"

#include <probe/redis_check.hpp>

using namespace dbcheck;
using namespace std::chrono_literals;
using testing::FakePeers;
using R = core::RespValue;

namespace {

const util::HostPort k_master{"10.0.0.1", 6379};
const util::HostPort k_replica{"10.0.0.2", 6379};

config::RedisCluster cluster() {
  config::RedisCluster c;
  c.name = "cache";
  c.master_name = "mymaster";
  c.sentinels = {{"10.0.1.1", 26379}, {"10.0.1.2", 26379}, {"10.0.1.3", 26379}};
  return c;
}

config::Backend backend(config::Role role, util::Duration max_lag = util::Duration{1000}) {
  config::Backend b;
  b.name = "cache";
  b.cluster = "cache";
  b.role = role;
  b.max_lag = max_lag;
  return b;
}

R sentinel_reply(const std::vector<std::string>& cmd, const std::string& master_host) {
  if (cmd.at(1) == "GET-MASTER-ADDR-BY-NAME") {
    return R::array({R::string(master_host), R::string("6379")});
  }
  return R::array({R::string("name"), R::string("mymaster"), R::string("flags"),
                   R::string("master"), R::string("config-epoch"), R::string("3")});
}

// Three Sentinels naming 10.0.0.1 master at offset 1000 (spelled `master_host`: an IP, or a
// name as with announce-hostnames), and a connected replica whose ROLE reads `offsets` in turn
// (the last one repeats).
std::shared_ptr<FakePeers> lab(std::vector<long long> offsets,
                               std::string master_host = "10.0.0.1") {
  auto f = std::make_shared<FakePeers>();
  for (const auto& s : cluster().sentinels) {
    f->redis_answers[util::to_string(s)] =
        [master_host](const std::vector<probe::RedisCommand>& cmds) {
          std::vector<R> out;
          for (const auto& c : cmds) {
            out.push_back(sentinel_reply(c, master_host));
          }
          return out;
        };
  }
  f->redis_answers["10.0.0.1:6379"] = [](const std::vector<probe::RedisCommand>& cmds) {
    std::vector<R> out;
    for (const auto& c : cmds) {
      out.push_back(c[0] == "PING"
                        ? R::status("PONG")
                        : R::array({R::string("master"), R::number(1000), R::array({})}));
    }
    return out;
  };
  auto next = std::make_shared<std::size_t>(0);
  f->redis_answers["10.0.0.2:6379"] = [offsets, next,
                                       master_host](const std::vector<probe::RedisCommand>& cmds) {
    std::vector<R> out;
    for (const auto& c : cmds) {
      if (c[0] == "PING") {
        out.push_back(R::status("PONG"));
        continue;
      }
      const long long offset = offsets[std::min(*next, offsets.size() - 1)];
      ++*next;
      out.push_back(R::array({R::string("slave"), R::string(master_host), R::number(6379),
                              R::string("connected"), R::number(offset)}));
    }
    return out;
  };
  return f;
}

core::Report check(const std::shared_ptr<FakePeers>& f, config::Role role,
                   const util::HostPort& node, util::Duration max_lag = util::Duration{1000}) {
  auto r = probe::check_redis(cluster(), backend(role, max_lag), node,
                              probe::Deadline::in(util::Duration{10000}), f);
  REQUIRE(testing::settled(f)); // no thread of the check outlives the test
  return r;
}

} // namespace

TEST_CASE("a Redis replica is read only after the majority's master is sampled", "[probe][redis]") {
  auto f = lab({1000});
  const auto r = check(f, config::Role::replica, k_replica);
  const int sample = f->first("redis 10.0.0.1:6379");
  REQUIRE(sample >= 0);
  CHECK(f->first("redis 10.0.0.2:6379") > sample);
  CHECK(r.verdict.state == core::State::up);
}

TEST_CASE("a Redis replica a little behind is watched with ROLE until it passes the sample",
          "[probe][redis]") {
  auto f = lab({900, 990, 1000});
  const auto r = check(f, config::Role::replica, k_replica);
  CHECK(f->count("redis 10.0.0.2:6379 ROLE; PING") == 1); // the first read
  CHECK(f->count("redis 10.0.0.2:6379 ROLE") == 3);       // and two re-reads, ROLE alone
  bool polled = false;
  for (const auto& s : r.steps) {
    polled = polled ||
             (s.opinion == "node" && s.asked.find("(ROLE polled 3 times)") != std::string::npos);
  }
  CHECK(polled);
  CHECK(r.verdict.state == core::State::up);
}

TEST_CASE("a Redis replica's node step times the node alone: the master's sample and the "
          "watch are not its",
          "[probe][redis][latency]") {
  auto f = lab({900, 990, 1000});
  FakePeers* peers = f.get();
  const auto replica = f->redis_answers["10.0.0.2:6379"];
  f->redis_answers["10.0.0.2:6379"] = [replica, peers](const std::vector<probe::RedisCommand>& c) {
    if (c.size() > 1) {
      peers->sleep_for(250ms); // the node's own slowness, in its first answer
    }
    return replica(c);
  };
  const auto master = f->redis_answers["10.0.0.1:6379"];
  f->redis_answers["10.0.0.1:6379"] = [master, peers](const std::vector<probe::RedisCommand>& c) {
    peers->sleep_for(200ms); // a slow master is the sample's time, not the replica's
    return master(c);
  };
  const auto r = check(f, config::Role::replica, k_replica);
  CHECK(f->count("redis 10.0.0.2:6379 ROLE") == 3);
  CHECK(r.node_answered);
  for (const auto& s : r.steps) {
    if (s.opinion == "node") {
      // Its connection and its answer (1 ms each on the fake clock, and the 250 ms); the
      // Sentinels may tick the shared fake clock meanwhile, a few ms at most.
      CHECK(s.latency_ms >= 251.0);
      CHECK(s.latency_ms < 260.0);
    }
  }
}

TEST_CASE("a Redis replica that stays behind is judged by what the watch saw", "[probe][redis]") {
  auto f = lab({900});
  const auto r = check(f, config::Role::replica, k_replica, util::Duration{100});
  REQUIRE(r.lag);
  CHECK_FALSE(r.lag->seconds); // Redis keeps no replay timestamp to fall back on
  CHECK_THAT(r.lag->derivation, dbcheck_test::Contains("still 100 bytes behind"));
  CHECK(r.verdict.state == core::State::down);
}

TEST_CASE("Sentinels that never answer are abandoned at the deadline", "[probe][redis]") {
  auto f = lab({1000});
  auto gate = std::make_shared<testing::Gate>();
  for (const auto& s : cluster().sentinels) {
    f->redis_answers[util::to_string(s)] = [gate](const std::vector<probe::RedisCommand>& cmds) {
      gate->wait(); // until the check has returned: it must not wait for this
      return std::vector<R>(cmds.size(), R::nil());
    };
  }
  const auto r = probe::check_redis(cluster(), backend(config::Role::primary), k_master,
                                    probe::Deadline::in(util::Duration{100}), f);
  gate->open();
  REQUIRE(testing::settled(f));
  CHECK(r.verdict.state == core::State::down);
  CHECK_THAT(r.verdict.reason, dbcheck_test::Contains("did not finish by the deadline"));
}

TEST_CASE("Sentinels that announce host names: the name is compared by its one address",
          "[probe][redis][names]") {
  auto f = lab({1000}, "redis1.example");
  f->names["redis1.example"] = {"10.0.0.1"};
  auto r = check(f, config::Role::primary, k_master);
  CHECK(r.verdict.state == core::State::up);
  CHECK(f->count("resolve redis1.example") == 1);

  // The replica: the majority's master sampled at its address, the replica's master_host
  // (the same name, from Sentinel's REPLICAOF) compared by address too, looked up once.
  auto g = lab({1000}, "redis1.example");
  g->names["redis1.example"] = {"10.0.0.1"};
  r = check(g, config::Role::replica, k_replica);
  CHECK(r.verdict.state == core::State::up);
  CHECK(g->count("resolve redis1.example") == 1);
  CHECK(g->count("open 10.0.0.1:6379") == 1);
}

TEST_CASE("a master name that does not resolve counts as Sentinels that did not answer",
          "[probe][redis][names]") {
  auto f = lab({1000}, "redis1.example");
  const auto r = check(f, config::Role::primary, k_master);
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::network);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("names master redis1.example:6379, and redis1.example did not "
                                    "resolve: no such name"));
  CHECK(f->count("open redis1.example") == 0); // no blocking lookup behind the deadline's back
}

namespace {

// The master's data node answering ROLE master, PING with `ping` and the write probe with
// `probe`.
void master_answers(FakePeers& f, R ping, R probe) {
  f.redis_answers["10.0.0.1:6379"] = [ping, probe](const std::vector<probe::RedisCommand>& cmds) {
    std::vector<R> out;
    for (const auto& c : cmds) {
      out.push_back(c[0] == "PING" ? ping
                    : c[0] == "LPUSHX"
                        ? probe
                        : R::array({R::string("master"), R::number(1000), R::array({})}));
    }
    return out;
  };
}

} // namespace

TEST_CASE("a Redis writer check sends the write probe with ROLE and PING, a reader does not",
          "[probe][redis]") {
  auto f = lab({1000});
  master_answers(*f, R::status("PONG"), R::number(0));
  const auto w = check(f, config::Role::primary, k_master);
  CHECK(f->count("redis 10.0.0.1:6379 ROLE; PING; LPUSHX dbcheck:write-probe 1") == 1);
  CHECK(w.verdict.state == core::State::up);
  CHECK(w.verdict.reason.find("accepts writes") != std::string::npos);
  check(f, config::Role::replica, k_replica);
  CHECK(f->count("redis 10.0.0.2:6379 ROLE; PING") == 1);
  CHECK(f->count("redis 10.0.0.2:6379 ROLE; PING; LPUSHX") == 0);

  auto quiet = lab({1000});
  auto c = cluster();
  c.write_probe = false;
  const auto r = probe::check_redis(c, backend(config::Role::primary), k_master,
                                    probe::Deadline::in(util::Duration{10000}), quiet);
  REQUIRE(testing::settled(quiet));
  CHECK(quiet->count("redis 10.0.0.1:6379 ROLE; PING") == 1);
  CHECK(quiet->count("redis 10.0.0.1:6379 ROLE; PING; LPUSHX") == 0);
  CHECK(r.verdict.reason.find("Redis ROLE says master") != std::string::npos);
}

TEST_CASE("a Redis master that refuses writes is down as unwritable, its role still known",
          "[probe][redis]") {
  const std::string misconf =
      "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist "
      "to disk.";
  auto f = lab({1000});
  // A failed save refuses PING too: the role read in the same pipeline still counts.
  master_answers(*f, R::error(misconf), R::error(misconf));
  auto r = check(f, config::Role::primary, k_master);
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::unwritable);
  CHECK(r.verdict.reason.find("refuses writes: MISCONF") != std::string::npos);
  bool shown = false;
  for (const auto& s : r.steps) {
    shown = shown || (s.opinion == "node" &&
                      s.answer.find("the write probe was refused: MISCONF") != std::string::npos);
  }
  CHECK(shown); // explain shows what was asked and what came back

  master_answers(*f, R::status("PONG"), R::error("NOREPLICAS Not enough good replicas to write."));
  r = check(f, config::Role::primary, k_master);
  CHECK(r.verdict.failure == core::Failure::unwritable);
  CHECK(r.verdict.reason.find("NOREPLICAS") != std::string::npos);

  // A check user without the right to send the probe: judged as before, and told so.
  master_answers(*f, R::status("PONG"),
                 R::error("NOPERM User healthcheck has no permissions to run the 'lpushx' "
                          "command"));
  r = check(f, config::Role::primary, k_master);
  CHECK(r.verdict.state == core::State::up);
  CHECK(r.verdict.reason.find("writes not probed: NOPERM") != std::string::npos);
}
