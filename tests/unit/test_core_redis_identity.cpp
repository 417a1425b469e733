// Which Redis instance answers at the master's address: its run_id against the Sentinels'.
#include "dbcheck_catch.hpp"

#include <core/redis_verdict.hpp>

using namespace dbcheck::core;
using dbcheck::util::HostPort;

namespace {

const HostPort k_node{"10.0.0.1", 6379};
const HostPort k_other{"10.0.0.2", 6379};
const std::string k_old(40, 'a');
const std::string k_new(40, 'b');

SentinelAnswer says(int i, const HostPort& master, const std::string& run_id,
                    const char* flags = "master") {
  SentinelView v;
  v.master = master;
  v.flags = flags;
  v.config_epoch = 3;
  v.role_reported = "master";
  v.info_refresh_ms = 2000;
  v.run_id = run_id;
  return {HostPort{"10.0.0.9", static_cast<std::uint16_t>(26379 + i)}, v};
}

RedisObservation writer(std::vector<SentinelAnswer> sentinels, NodeRunId run_id) {
  RedisRole role;
  role.master = true;
  role.offset = 100;
  RedisObservation obs{k_node, std::move(sentinels), 3, role, {}};
  obs.write = {WriteProbe::Outcome::accepted, ""};
  obs.run_id = std::move(run_id);
  return obs;
}

NodeRunId known(const std::string& id) {
  return {NodeRunId::Outcome::known, id};
}

} // namespace

TEST_CASE("INFO server's run_id line is found among the others", "[core][redis][identity]") {
  CHECK(run_id_from_info("# Server\r\nredis_version:7.0.15\r\nrun_id:" + k_old +
                         "\r\ntcp_port:6379\r\n") == k_old);
  CHECK(run_id_from_info("run_id:" + k_new) == k_new);
  CHECK(run_id_from_info("# Server\r\nredis_version:7.0.15\r\n").empty());
  CHECK(run_id_from_info("").empty());
  CHECK(run_id_from_info("xrun_id:abc\r\n").empty()); // a whole key, at the start of a line
}

TEST_CASE("a master whose run_id is not the Sentinels' is another instance: identity",
          "[core][redis][identity]") {
  // Restarted since the Sentinels last read its INFO: they all still hold the old run_id.
  const Verdict restarted = evaluate_redis_writer(
      writer({says(0, k_node, k_old), says(1, k_node, k_old), says(2, k_node, k_old)},
             known(k_new)),
      SaturationPolicy::up);
  CHECK(restarted.state == State::down);
  CHECK(restarted.failure == Failure::identity);
  CHECK(restarted.reason ==
        "identity: Redis's run_id " + k_new + " is not the " + k_old +
            " that 3 Sentinels last read from this master: it restarted since they looked "
            "(empty, if it keeps no data on disk) or another server answers at this address; no "
            "writer until they have seen it (they read INFO every 10 s); 3 of 3 Sentinels name "
            "this node master (need 2); Redis ROLE says master and it accepts writes");
  // Two of three have seen the restart already: the majority's is the node's own.
  CHECK(evaluate_redis_writer(
            writer({says(0, k_node, k_old), says(1, k_node, k_new), says(2, k_node, k_new)},
                   known(k_new)),
            SaturationPolicy::up)
            .state == State::up);
  // One stale Sentinel is not a majority: the others' split decides nothing against the node.
  CHECK(
      evaluate_redis_writer(
          writer({says(0, k_node, k_old), says(1, k_node, ""), says(2, k_node, "")}, known(k_new)),
          SaturationPolicy::up)
          .state == State::up);
  // The runid of Sentinels naming another master is that master's, not this node's.
  const Verdict elsewhere = evaluate_redis_writer(
      writer({says(0, k_other, k_old), says(1, k_other, k_old), says(2, k_node, k_new)},
             known(k_new)),
      SaturationPolicy::up);
  CHECK(elsewhere.failure == Failure::role);
  // The same Sentinel answering twice counts once.
  CHECK(evaluate_redis_writer(
            writer({says(0, k_node, k_old), says(0, k_node, k_old), says(2, k_node, k_new)},
                   known(k_new)),
            SaturationPolicy::up)
            .failure != Failure::identity);
}

TEST_CASE("a run_id that could not be read is not checked, and the reason says so",
          "[core][redis][identity]") {
  const auto sentinels = {says(0, k_node, k_old), says(1, k_node, k_old), says(2, k_node, k_old)};
  const Verdict v = evaluate_redis_writer(
      writer(sentinels, {NodeRunId::Outcome::unknown,
                         "INFO server refused (NOPERM User healthcheck has no permissions to "
                         "run the 'info' command; grant +info)"}),
      SaturationPolicy::up);
  CHECK(v.state == State::up);
  CHECK(v.failure == Failure::none);
  CHECK_THAT(v.reason, dbcheck_test::EndsWith(
                           "; identity not checked: INFO server refused (NOPERM User healthcheck "
                           "has no permissions to run the 'info' command; grant +info)"));
  // Not asked (a config without it, or a fake): nothing said.
  CHECK(
      evaluate_redis_writer(writer(sentinels, {}), SaturationPolicy::up).reason.find("identity") ==
      std::string::npos);
}
