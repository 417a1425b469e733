// The agent's disk rule through scripted peers (fake_peers.hpp): which paths are measured, that
// only a check on the node measures them, and the verdict either role ends with.
#include "dbcheck_catch.hpp"
#include "fake_peers.hpp"

#include <core/pg_rows.hpp>
#include <probe/disk_space.hpp>
#include <probe/pg_check.hpp>

using namespace dbcheck;
using testing::FakePeers;

namespace {

constexpr std::uint64_t k_mib = 1ULL << 20;
constexpr std::uint64_t k_gib = 1ULL << 30;
const util::HostPort k_leader{"10.0.0.1", 5432};
constexpr const char* k_data = "/var/lib/postgresql/17/main";
constexpr const char* k_wal = "/var/lib/postgresql/17/main/pg_wal";

config::PostgresCluster cluster_on(std::optional<std::string> data_directory) {
  config::PostgresCluster c = testing::two_member_cluster();
  c.data_directory = std::move(data_directory);
  return c;
}

core::FsSpace fs(const char* resolved, std::uint64_t device, std::uint64_t free_bytes) {
  return {resolved, device, free_bytes, 20 * k_gib, 50000, 65536};
}

// pg1 leads by its members and its own Patroni, and answers as a read-write primary.
std::shared_ptr<FakePeers> primary_lab() {
  auto f = std::make_shared<FakePeers>();
  f->http = [](const std::string& url) {
    return testing::http_ok(url.ends_with("/primary") ? testing::k_pg1_primary
                                                      : testing::k_two_member_cluster);
  };
  f->pg_answers["10.0.0.1:5432"] = [](const std::string&) {
    return std::vector<probe::PgRow>{{"f", "off", "3", "47"}};
  };
  return f;
}

core::Report check(const std::shared_ptr<FakePeers>& f, const config::PostgresCluster& c,
                   probe::Vantage vantage) {
  auto r = probe::check_postgres(c, testing::two_member_writer(), k_leader,
                                 probe::Deadline::in(util::Duration{10000}), f, vantage);
  REQUIRE(testing::settled(f));
  return r;
}

} // namespace

TEST_CASE("a writer on the node with a nearly full disk is down, unwritable",
          "[probe][disk_space]") {
  auto f = primary_lab();
  f->disks[k_data] = fs(k_data, 1, 180 * k_mib);
  f->disks[k_wal] = fs(k_wal, 1, 180 * k_mib);
  const auto r = check(f, cluster_on(k_data), probe::Vantage::on_node);
  CHECK(f->count("statvfs ") == 2);
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::unwritable);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("disk nearly full: /var/lib/postgresql/17/main has 180 MiB "
                                    "free of 20 GiB (min_free_space 1 GiB); Patroni names"));
  // explain shows both measurements as steps.
  int disk_steps = 0;
  for (const auto& s : r.steps) {
    if (s.opinion == "disk") {
      ++disk_steps;
      CHECK(s.answer == "180 MiB free of 20 GiB, 50000 of 65536 inodes free");
    }
  }
  CHECK(disk_steps == 2);
}

TEST_CASE("the same writer with room passes, and the external check never measures",
          "[probe][disk_space]") {
  auto f = primary_lab();
  f->disks[k_data] = fs(k_data, 1, 5 * k_gib);
  f->disks[k_wal] = fs("/srv/wal", 2, 5 * k_gib); // pg_wal a link to another filesystem
  const auto on_node = check(f, cluster_on(k_data), probe::Vantage::on_node);
  CHECK(on_node.verdict.state == core::State::up);
  CHECK(f->first("statvfs /var/lib/postgresql/17/main/pg_wal") >= 0);

  auto g = primary_lab();
  const auto remote = check(g, cluster_on(k_data), probe::Vantage::remote);
  CHECK(g->count("statvfs ") == 0);
  CHECK(remote.verdict.state == core::State::up);
}

TEST_CASE("without a data_directory free space is not measured, and explain says so",
          "[probe][disk_space]") {
  auto f = primary_lab();
  const auto r = check(f, cluster_on(std::nullopt), probe::Vantage::on_node);
  CHECK(f->count("statvfs ") == 0);
  CHECK(r.verdict.state == core::State::up);
  bool said = false;
  for (const auto& s : r.steps) {
    said =
        said || (s.opinion == "disk" && s.answer == "free space not measured (no data_directory)");
  }
  CHECK(said);
}

TEST_CASE("a pg_wal the agent may not reach fails the writer closed", "[probe][disk_space]") {
  auto f = primary_lab();
  f->disks[k_data] = fs(k_data, 1, 5 * k_gib);
  f->disks[k_wal] = tl::make_unexpected(std::string{"Permission denied"});
  const auto r = check(f, cluster_on(k_data), probe::Vantage::on_node);
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::config);
  CHECK_THAT(r.verdict.reason,
             dbcheck_test::Contains("cannot measure free space of "
                                    "/var/lib/postgresql/17/main/pg_wal (WAL directory): "
                                    "Permission denied"));
}

TEST_CASE("past the deadline nothing is measured, and a writer fails closed",
          "[probe][disk_space]") {
  FakePeers f;
  f.disks[k_data] = fs(k_data, 1, 5 * k_gib);
  core::Report r;
  r.verdict = {core::State::up, core::Failure::none, "both opinions agree"};
  probe::judge_disks(cluster_on(k_data), true, probe::Deadline{probe::Clock::time_point{}}, f, r);
  CHECK(f.count("statvfs ") == 0);
  CHECK(r.verdict.state == core::State::down);
  CHECK(r.verdict.failure == core::Failure::timeout); // out of time, not misconfigured
  CHECK_THAT(r.verdict.reason, dbcheck_test::Contains("the check's deadline passed before it was "
                                                      "asked"));
}
