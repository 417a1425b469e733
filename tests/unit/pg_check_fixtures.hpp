#pragma once
// The lab of the PostgreSQL probe's tests (test_probe_pg_check_*.cpp): scripted peers for the
// two-member cluster of fake_peers.hpp, pg1 leading, pg2 replicating, and a check run against
// them. A namespace of its own: the verdict tests' fixtures (pg_verdict_fixtures.hpp) name a
// k_replica too.

#include "dbcheck_catch.hpp"
#include "fake_peers.hpp"

#include <core/pg_rows.hpp>
#include <core/report.hpp>
#include <probe/pg_check.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace dbcheck::testing::pg_check {

// What the members answer to GET /cluster (pg1 leads) and pg1's own Patroni to GET /primary.
inline constexpr const char* k_cluster = testing::k_two_member_cluster;
inline constexpr const char* k_primary = testing::k_pg1_primary;

// pg1's and pg2's PostgreSQL.
inline const util::HostPort k_leader{"10.0.0.1", 5432};
inline const util::HostPort k_replica{"10.0.0.2", 5432};
// The replica query asked of pg2, as FakePeers::log() has it.
inline const std::string k_replica_query = std::string{"sql 10.0.0.2:5432 "} + core::k_replica_sql;

// The cluster's configuration (fake_peers.hpp's two_member_cluster()).
inline config::PostgresCluster cluster() {
  return testing::two_member_cluster();
}

// The cluster's writer (pg_write) or reader (pg_read) backend, with `max_lag`.
inline config::Backend backend(config::Role role, util::Duration max_lag = util::Duration{1000}) {
  config::Backend b;
  b.name = role == config::Role::primary ? "pg_write" : "pg_read";
  b.cluster = "demo";
  b.role = role;
  b.max_lag = max_lag;
  return b;
}

// Peers where the members agree pg1 leads, pg1 is a running primary at 0/3000060 on timeline 1,
// and pg2 is a streaming replica on timeline `tli` whose replay reads `replays` in turn (the
// last one repeats).
inline std::shared_ptr<FakePeers> lab(std::vector<std::string> replays, std::string tli = "1",
                                      std::string paused = "f") {
  auto f = std::make_shared<FakePeers>();
  f->http = [](const std::string& url) {
    return testing::http_ok(url.ends_with("/primary") ? k_primary : k_cluster);
  };
  f->pg_answers["10.0.0.1:5432"] = [](const std::string& sql) {
    if (sql == core::k_writer_sql) {
      return std::vector<probe::PgRow>{{"f", "off", "3", "47"}};
    }
    return std::vector<probe::PgRow>{{"0/3000060", "00000001"}};
  };
  auto next = std::make_shared<std::size_t>(0);
  f->pg_answers["10.0.0.2:5432"] = [replays, tli, paused, next](const std::string& sql) {
    const std::string lsn = replays[std::min(*next, replays.size() - 1)];
    ++*next;
    if (sql == core::k_replica_sql) {
      return std::vector<probe::PgRow>{{"t", "t", "streaming", paused, lsn, "0.5", tli}};
    }
    return std::vector<probe::PgRow>{{lsn, "0.5"}};
  };
  return f;
}

// The check of `node` for the `role` backend with `max_lag`, 10 s before its deadline; fails
// the test if a thread of the check outlives it.
inline core::Report check(const std::shared_ptr<FakePeers>& f, config::Role role,
                          const util::HostPort& node,
                          util::Duration max_lag = util::Duration{1000}) {
  auto r = probe::check_postgres(cluster(), backend(role, max_lag), node,
                                 probe::Deadline::in(util::Duration{10000}), f);
  REQUIRE(testing::settled(f)); // no thread of the check outlives the test
  return r;
}

// The report's step that holds the node's own answer; fails the test if there is none.
inline const core::Step& node_step(const core::Report& r) {
  for (const auto& s : r.steps) {
    if (s.opinion == "node") {
      return s;
    }
  }
  FAIL("no node step");
  return r.steps.front();
}

} // namespace dbcheck::testing::pg_check
