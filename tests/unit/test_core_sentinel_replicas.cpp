#include "dbcheck_catch.hpp"

#include <core/sentinel_replicas.hpp>

#include <string>
#include <vector>

using namespace dbcheck::core;
using dbcheck::util::HostPort;

namespace {

HostPort sentinel(int i) {
  return {"10.0.0." + std::to_string(i), 26379};
}

ReplicaListing listed(int i, std::vector<SentinelReplica> replicas) {
  return {sentinel(i), std::move(replicas), false};
}

ReplicaListing refused(int i) {
  return {sentinel(i),
          tl::make_unexpected(ProbeError{Failure::auth,
                                         "NOPERM User healthcheck has no permissions to run the "
                                         "'sentinel|replicas' command",
                                         ""}),
          true};
}

ReplicaListing timed_out(int i) {
  return {sentinel(i), tl::make_unexpected(ProbeError{Failure::timeout, "timed out", ""}), false};
}

SentinelReplica replica(const std::string& host, const std::string& flags = "slave",
                        const std::string& link = "ok") {
  return {{host, 6379}, flags, link};
}

} // namespace

TEST_CASE("the replicas every Sentinel lists: each once, by address, with how many list it",
          "[core][status]") {
  const KnownReplicas k = merge_replica_listings(
      {listed(1, {replica("10.0.1.3"), replica("10.0.1.2")}),
       listed(2, {replica("10.0.1.2", "slave,s_down", "err")}), timed_out(3)});
  REQUIRE(k.replicas.size() == 2);
  CHECK(k.replicas[0].addr == HostPort{"10.0.1.2", 6379});
  CHECK(k.replicas[0].listed_by == 2);
  CHECK(k.replicas[0].flags == "s_down");
  CHECK(k.replicas[0].link_err);
  CHECK(k.replicas[1].addr == HostPort{"10.0.1.3", 6379});
  CHECK(k.replicas[1].listed_by == 1);
  CHECK(k.replicas[1].flags.empty());
  CHECK_FALSE(k.replicas[1].link_err);
  // A Sentinel that did not answer is in the Sentinel table already: no note.
  CHECK(k.note.empty());
  CHECK(replica_manager_words(k.replicas[0], 3) == "replica 2/3 s_down link err");
  CHECK(replica_manager_words(k.replicas[1], 3) == "replica 1/3");
}

TEST_CASE("flags merged from several Sentinels are each named once", "[core][status]") {
  const KnownReplicas k =
      merge_replica_listings({listed(1, {replica("10.0.1.2", "slave,s_down,disconnected")}),
                              listed(2, {replica("10.0.1.2", "s_down,slave")})});
  REQUIRE(k.replicas.size() == 1);
  CHECK(k.replicas[0].flags == "s_down,disconnected");
}

TEST_CASE("a Sentinel ACL refusing SENTINEL REPLICAS is named, with the rule to add",
          "[core][status]") {
  SECTION("every Sentinel refuses: no replica known, and why") {
    const KnownReplicas k = merge_replica_listings({refused(1), refused(2), refused(3)});
    CHECK(k.replicas.empty());
    CHECK(k.note == "replicas unknown: the Sentinel user may not run SENTINEL REPLICAS (NOPERM); "
                    "add +sentinel|replicas to its ACL");
  }
  SECTION("some refuse: the list is what the others gave, and the refusers are named") {
    const KnownReplicas k =
        merge_replica_listings({listed(1, {replica("10.0.1.2")}), refused(2), refused(3)});
    CHECK(k.replicas.size() == 1);
    CHECK(k.note == "replicas as 1 of 3 Sentinels list them: the Sentinel user may not run "
                    "SENTINEL REPLICAS on 10.0.0.2:26379, 10.0.0.3:26379 (NOPERM); add "
                    "+sentinel|replicas to its ACL");
  }
  SECTION("the others silent: still unknown, the refusers named") {
    const KnownReplicas k = merge_replica_listings({timed_out(1), refused(2)});
    CHECK(k.note == "replicas unknown: the Sentinel user may not run SENTINEL REPLICAS on "
                    "10.0.0.2:26379 (NOPERM); add +sentinel|replicas to its ACL");
  }
}

TEST_CASE("no Sentinel answering: replicas unknown, with the first reason", "[core][status]") {
  const KnownReplicas k = merge_replica_listings({timed_out(1), timed_out(2)});
  CHECK(k.replicas.empty());
  CHECK(k.note == "replicas unknown: no Sentinel listed them (timed out)");
  // Listing none is an answer: a master without replicas.
  CHECK(merge_replica_listings({listed(1, {}), timed_out(2)}).note.empty());
  CHECK(merge_replica_listings({}).note.empty());
}
