// When a check may use a Patroni view another check of its host shared (core/shared_view.hpp).
#include "dbcheck_catch.hpp"

#include <core/shared_view.hpp>

using namespace dbcheck;
using namespace std::chrono_literals;

namespace {

core::ClusterView view_with_leader(const char* leader_host, const char* role = "leader") {
  core::ClusterView v;
  core::PatroniMember m;
  m.name = "pg1";
  m.role = role;
  m.state = "running";
  m.address = util::HostPort{leader_host, 5432};
  v.members.push_back(m);
  core::PatroniMember r;
  r.name = "pg2";
  r.role = "replica";
  r.state = "streaming";
  r.address = util::HostPort{"10.0.0.2", 5432};
  v.members.push_back(r);
  return v;
}

const util::HostPort k_pg1{"10.0.0.1", 5432};
const util::HostPort k_pg2{"10.0.0.2", 5432};

} // namespace

TEST_CASE("a shared view is fresh only while both clocks call it young", "[core][shared_view]") {
  CHECK(core::shared_view_fresh(300ms, 300ms, 500ms));
  CHECK(core::shared_view_fresh(0ms, 2ms, 500ms));
  CHECK_FALSE(core::shared_view_fresh(600ms, 600ms, 500ms)); // too old
  CHECK_FALSE(core::shared_view_fresh(-1ms, 0ms, 500ms));    // written "later": not this boot
  // Kept across a reboot: the monotonic clock restarted, the wall clock did not.
  CHECK_FALSE(core::shared_view_fresh(100ms, 3600s, 500ms));
  CHECK_FALSE(core::shared_view_fresh(100ms, -2s, 500ms)); // the wall clock stepped back
}

TEST_CASE("two clocks agree on a stretch of time within a second", "[core][shared_view]") {
  CHECK(core::clocks_agree(1500ms, 1000ms));
  CHECK(core::clocks_agree(1000ms, 2000ms));
  CHECK_FALSE(core::clocks_agree(100ms, 3600s)); // another boot
  CHECK_FALSE(core::clocks_agree(2100ms, 1000ms));
}

TEST_CASE("each cluster's Patroni URLs have their own shared view", "[core][shared_view]") {
  const auto a = core::shared_view_key({"http://10.0.0.1:8008", "http://10.0.0.2:8008"});
  CHECK(a == core::shared_view_key({"http://10.0.0.1:8008", "http://10.0.0.2:8008"}));
  CHECK(a != core::shared_view_key({"http://10.0.0.1:8008", "http://10.0.0.3:8008"}));
  CHECK(a != core::shared_view_key({"http://10.0.0.1:8008"}));
  CHECK(a.rfind("patroni-", 0) == 0);
  CHECK(a.size() == 8 + 16);
}

TEST_CASE("auto: half the time between a server's checks, at most 2 s", "[core][shared_view]") {
  CHECK(core::auto_shared_view_max_age(1030ms) == 515ms); // inter 1s, a 30 ms check
  CHECK(core::auto_shared_view_max_age(2100ms) == 1050ms);
  CHECK(core::auto_shared_view_max_age(9s) == 2s); // downinter 9s: the longest age allowed
  CHECK(core::auto_shared_view_max_age(60ms) == 30ms);
  // None before, too long ago to say, a clock that stepped back, too short: ask live.
  CHECK_FALSE(core::auto_shared_view_max_age(std::nullopt));
  CHECK_FALSE(core::auto_shared_view_max_age(11s));
  CHECK_FALSE(core::auto_shared_view_max_age(-5ms));
  CHECK_FALSE(core::auto_shared_view_max_age(1ms));
}

TEST_CASE("each server of each backend has its own mark", "[core][shared_view]") {
  const auto a = core::check_mark_key("pg_write", "10.0.0.1:5432");
  CHECK(a == core::check_mark_key("pg_write", "10.0.0.1:5432"));
  CHECK(a != core::check_mark_key("pg_read", "10.0.0.1:5432"));
  CHECK(a != core::check_mark_key("pg_write", "10.0.0.2:5432"));
  CHECK(a.rfind("check-", 0) == 0);
  CHECK(a.size() == 6 + 16);
}

TEST_CASE("a shared view never keeps a writer up", "[core][shared_view]") {
  core::NodeRole writable;
  writable.in_recovery = false;
  writable.read_only = false;
  core::NodeRole replica; // in recovery, read-only
  core::NodeRole read_only_primary;
  read_only_primary.in_recovery = false;
  const auto pg1_leads = view_with_leader("10.0.0.1");
  // A writable node: its members are asked live, whoever the view names.
  CHECK_FALSE(core::shared_view_fits_writer(pg1_leads, k_pg1, writable));
  CHECK_FALSE(core::shared_view_fits_writer(pg1_leads, k_pg2, writable));
  // Not writable and not named: down by its own word and the view's.
  CHECK(core::shared_view_fits_writer(pg1_leads, k_pg2, replica));
  CHECK(core::shared_view_fits_writer(view_with_leader("10.0.0.1", "replica"), k_pg1, replica));
  // Named leader: its own Patroni must be asked, live.
  CHECK_FALSE(core::shared_view_fits_writer(pg1_leads, k_pg1, read_only_primary));
  CHECK_FALSE(core::shared_view_fits_writer(pg1_leads, k_pg1, replica));
}

TEST_CASE("a reader's shared view must fit the leader's sample and the node's state",
          "[core][shared_view]") {
  core::ReplicaStatus streaming;
  streaming.in_recovery = true;
  streaming.received_timeline = 2;
  const auto v = view_with_leader("10.0.0.1");
  CHECK(core::shared_view_fits_reader(v, k_pg2, streaming, 2, false));
  // Not sampled: refused or gone, asked again; hung, kept (asking would spend the time the
  // replica's own bound needs, and the members would name the same hung leader).
  CHECK_FALSE(core::shared_view_fits_reader(v, k_pg2, streaming, std::nullopt, false));
  CHECK(core::shared_view_fits_reader(v, k_pg2, streaming, std::nullopt, true));
  CHECK_FALSE(core::shared_view_fits_reader(v, k_pg2, streaming, 3, false)); // a new timeline
  core::ReplicaStatus hidden = streaming;
  hidden.received_timeline.reset(); // no dbcheck views: the timeline cannot be compared
  CHECK(core::shared_view_fits_reader(v, k_pg2, hidden, 3, false));
  // Named leader: fits while it is not in recovery.
  core::ReplicaStatus primary;
  CHECK(core::shared_view_fits_reader(v, k_pg1, primary, std::nullopt, false));
  CHECK_FALSE(core::shared_view_fits_reader(v, k_pg1, streaming, std::nullopt, false));
  // No leader: asked again (a failover under way), unless a standby cluster's.
  CHECK_FALSE(core::shared_view_fits_reader(view_with_leader("10.0.0.1", "replica"), k_pg2,
                                            streaming, std::nullopt, false));
  CHECK(core::shared_view_fits_reader(view_with_leader("10.0.0.1", "standby_leader"), k_pg2,
                                      streaming, std::nullopt, false));
}
