#include "dbcheck_catch.hpp"

#include <core/redis_replies.hpp>

using namespace dbcheck::core;
using dbcheck::util::HostPort;
using R = RespValue;

TEST_CASE("ROLE of a master and of a replica", "[core][redis][role]") {
  const auto m = parse_role(R::array(
      {R::string("master"), R::number(3129),
       R::array({R::array({R::string("10.0.0.2"), R::string("6379"), R::string("3129")})})}));
  REQUIRE(m);
  CHECK(m->master);
  CHECK(m->offset == 3129);
  CHECK(describe(*m) == "master, offset 3129");
  CHECK(summarize(*m) == "master");

  const auto r = parse_role(R::array({R::string("slave"), R::string("10.0.0.1"), R::number(6379),
                                      R::string("connected"), R::number(3120)}));
  REQUIRE(r);
  CHECK_FALSE(r->master);
  CHECK(r->master_addr == HostPort{"10.0.0.1", 6379});
  CHECK(r->link_state == "connected");
  CHECK(r->offset == 3120);
  CHECK(describe(*r) == "replica of 10.0.0.1:6379 (connected), offset 3120");
  CHECK(summarize(*r) == "replica of 10.0.0.1:6379, link connected"); // no offset: it moves

  const auto syncing = parse_role(R::array({R::string("slave"), R::string("10.0.0.1"),
                                            R::number(6379), R::string("sync"), R::number(-1)}));
  REQUIRE(syncing);
  CHECK(syncing->offset == -1);
}

TEST_CASE("malformed and refused ROLE replies", "[core][redis][role]") {
  const auto [reply, kind, detail] = GENERATE(table<R, Failure, const char*>({
      {R::status("OK"), Failure::protocol, "malformed ROLE reply"},
      {R::array({}), Failure::protocol, "malformed ROLE reply"},
      {R::array({R::string("master")}), Failure::protocol,
       "malformed ROLE reply (master without an offset)"},
      {R::array({R::string("slave"), R::string("10.0.0.1"), R::number(6379)}), Failure::protocol,
       "malformed ROLE reply (replica with fewer than 5 fields)"},
      {R::array({R::string("slave"), R::string("10.0.0.1"), R::string("x"), R::string("connected"),
                 R::number(1)}),
       Failure::protocol, "malformed ROLE reply (replica fields)"},
      {R::array({R::string("sentinel"), R::array({R::string("mymaster")})}), Failure::protocol,
       "ROLE says \"sentinel\": not a data node"},
      {R::error("NOPERM User healthcheck has no permissions to run the 'role' command"),
       Failure::auth, "NOPERM User healthcheck has no permissions to run the 'role' command"},
      {R::error("NOAUTH Authentication required."), Failure::auth,
       "NOAUTH Authentication required."},
  }));
  CAPTURE(detail);
  const auto r = parse_role(reply);
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == kind);
  CHECK(r.error().detail == detail);
}

TEST_CASE("PING: PONG passes, LOADING is not ready", "[core][redis][ping]") {
  CHECK(parse_ping(R::status("PONG")));
  const auto loading = parse_ping(R::error("LOADING Redis is loading the dataset in memory"));
  REQUIRE_FALSE(loading);
  CHECK(loading.error().kind == Failure::not_ready);
  CHECK(parse_ping(R::error("MASTERDOWN Link with MASTER is down")).error().kind ==
        Failure::not_ready);
  CHECK(parse_ping(R::string("pong")).error().detail == "malformed PING reply");
}

TEST_CASE("error replies are classified", "[core][redis][errors]") {
  CHECK(
      classify_redis_error("WRONGPASS invalid username-password pair or user is disabled.").kind ==
      Failure::auth);
  CHECK(classify_redis_error("ERR invalid password").kind == Failure::auth);
  CHECK(classify_redis_error("ERR max number of clients reached").kind == Failure::saturated);
  CHECK(classify_redis_error("BUSY Redis is busy running a script.").kind == Failure::not_ready);
  CHECK(classify_redis_error("ERR unknown command 'FOO'").kind == Failure::protocol);
  // The reply's own code marks an answer the server chose to give (a refusal), not garbage.
  const ProbeError misconf = classify_redis_error("MISCONF Redis is configured to save RDB");
  CHECK(misconf.kind == Failure::unwritable);
  CHECK(misconf.code == "MISCONF");
  CHECK(classify_redis_error("OOM command not allowed when used memory > 'maxmemory'.").kind ==
        Failure::unwritable);
  CHECK(classify_redis_error("NOREPLICAS Not enough good replicas to write.").kind ==
        Failure::unwritable);
  CHECK(classify_redis_error("ERR OOM-like words later do not count").kind == Failure::protocol);
  CHECK(classify_redis_error("Protocol error, got \"<\"").code.empty());
  CHECK(parse_ping(R::string("pong")).error().code.empty());
}

TEST_CASE("the write probe's reply says whether writes are taken", "[core][redis][errors]") {
  using O = WriteProbe::Outcome;
  CHECK(parse_write_probe(R::number(0)).outcome == O::accepted);
  // The key exists as another type: the write got past every gate before it.
  CHECK(parse_write_probe(R::error("WRONGTYPE Operation against a key holding the wrong kind of "
                                   "value"))
            .outcome == O::accepted);
  const WriteProbe oom =
      parse_write_probe(R::error("OOM command not allowed when used memory > 'maxmemory'."));
  CHECK(oom.outcome == O::refused);
  CHECK(oom.detail == "OOM command not allowed when used memory > 'maxmemory'.");
  CHECK(parse_write_probe(R::error("NOREPLICAS Not enough good replicas to write.")).outcome ==
        O::refused);
  CHECK(parse_write_probe(R::error("MISCONF Errors writing to the AOF file: No space left on "
                                   "device"))
            .outcome == O::refused);
  // Refusals of the probe itself prove nothing about other writes.
  CHECK(parse_write_probe(R::error("NOPERM User healthcheck has no permissions to run the "
                                   "'lpushx' command"))
            .outcome == O::unknown);
  CHECK(parse_write_probe(R::error("READONLY You can't write against a read only replica."))
            .outcome == O::unknown);
  CHECK(parse_write_probe(R::status("OK")).outcome == O::unknown);
}

TEST_CASE("GET-MASTER-ADDR-BY-NAME replies", "[core][redis][sentinel]") {
  CHECK(parse_master_addr(R::array({R::string("10.0.0.1"), R::string("6379")})).value() ==
        HostPort{"10.0.0.1", 6379});
  CHECK(parse_master_addr(R::nil()).value() == std::nullopt);
  CHECK(parse_master_addr(R::array({R::string("10.0.0.1")})).error().detail ==
        "malformed GET-MASTER-ADDR-BY-NAME reply");
  CHECK(parse_master_addr(R::array({R::string("10.0.0.1"), R::string("0")})).error().detail ==
        "malformed GET-MASTER-ADDR-BY-NAME reply (host/port)");
  CHECK(parse_master_addr(R::array({R::string(""), R::string("6379")})).error().detail ==
        "malformed GET-MASTER-ADDR-BY-NAME reply (host/port)");
  CHECK(parse_master_addr(R::error("ERR Unknown sentinel subcommand 'get-master-addr-by-name'"))
            .error()
            .kind == Failure::protocol);
}

TEST_CASE("SENTINEL MASTER: flags and config-epoch", "[core][redis][sentinel]") {
  const auto v = parse_sentinel_master(R::array(
      {R::string("name"), R::string("mymaster"), R::string("ip"), R::string("10.0.0.1"),
       R::string("flags"), R::string("master,o_down"), R::string("config-epoch"), R::string("7")}));
  REQUIRE(v);
  CHECK(v->flags == "master,o_down");
  CHECK(v->config_epoch == 7);
  CHECK(v->unsettled());

  SentinelView calm;
  calm.flags = "master";
  CHECK_FALSE(calm.unsettled());
  calm.flags = "master,failover_in_progress";
  CHECK(calm.unsettled());
  calm.flags = "master,s_down"; // one Sentinel's doubt alone does not void its vote
  CHECK_FALSE(calm.unsettled());
  calm.flags = "master,o_downx";
  CHECK_FALSE(calm.unsettled());

  CHECK(parse_sentinel_master(R::array({R::string("flags")})).error().detail ==
        "malformed SENTINEL MASTER reply");
  CHECK(parse_sentinel_master(R::array({R::string("name"), R::string("m")})).error().detail ==
        "malformed SENTINEL MASTER reply (no flags)");
  CHECK(parse_sentinel_master(R::error("ERR No such master with that name")).error().kind ==
        Failure::protocol);
}

TEST_CASE("SENTINEL REPLICAS: addresses, flags and link of each replica",
          "[core][redis][replicas]") {
  const auto entry = [](const char* ip, const char* port, const char* flags, const char* link) {
    return R::array({R::string("name"), R::string("x"), R::string("ip"), R::string(ip),
                     R::string("port"), R::string(port), R::string("flags"), R::string(flags),
                     R::string("master-link-status"), R::string(link)});
  };
  const auto replicas = parse_sentinel_replicas(R::array(
      {entry("10.0.0.2", "6379", "slave", "ok"), entry("10.0.0.3", "6379", "slave,s_down", "ok"),
       entry("10.0.0.4", "6379", "slave", "err"),
       entry("10.0.0.5", "6379", "slave,disconnected", "ok"),
       entry("", "6379", "slave", "ok"),                      // no address: left out
       R::array({R::string("ip"), R::string("10.0.0.6")})})); // no port: left out
  REQUIRE(replicas.size() == 4);
  CHECK(replicas[0].addr == HostPort{"10.0.0.2", 6379});
  CHECK(replica_healthy(replicas[0]));
  CHECK_FALSE(replica_healthy(replicas[1])); // subjectively down
  CHECK_FALSE(replica_healthy(replicas[2])); // link to the master broken
  CHECK_FALSE(replica_healthy(replicas[3]));
  CHECK(parse_sentinel_replicas(R::error("ERR No such master with that name")).empty());
  CHECK(parse_sentinel_replicas(R::nil()).empty());
}
