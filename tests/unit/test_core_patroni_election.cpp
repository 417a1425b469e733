// Which leader the Patroni members agree on: a lone stale member cannot name a writer.
#include "dbcheck_catch.hpp"

#include <core/patroni_election.hpp>

using namespace dbcheck::core;
using dbcheck::util::HostPort;

namespace {

PatroniMember member(const char* name, const char* role, const char* host) {
  PatroniMember m;
  m.name = name;
  m.role = role;
  m.state = "running";
  m.address = HostPort{host, 5432};
  return m;
}

ClusterView leading(const char* name, const char* host) {
  ClusterView v;
  v.members.push_back(member(name, "leader", host));
  return v;
}

ClusterView leaderless() {
  ClusterView v;
  v.members.push_back(member("pg1", "replica", "10.0.0.1"));
  return v;
}

MemberAnswer said(const char* url, ClusterView v) {
  return {url, std::move(v)};
}

MemberAnswer failed(const char* url, Failure kind, const char* detail) {
  return {url, tl::make_unexpected(ProbeError{kind, detail, ""})};
}

} // namespace

TEST_CASE("more than half of the answering members must name the leader",
          "[core][patroni][election]") {
  const ClusterView pg1 = leading("pg1", "10.0.0.1");
  const ClusterView pg2 = leading("pg2", "10.0.0.2");

  // Two of three agree: pg1, whatever the third (stale) member says.
  auto e = elect_leader({said("a", pg1), said("b", pg1), said("c", pg2)}, 3);
  REQUIRE(e.view);
  CHECK(find_leader(*e.view)->name == "pg1");
  CHECK(e.answered == 3);
  CHECK(e.agreeing == 2);

  // A stale member answering first does not decide: the other two name pg2.
  e = elect_leader({said("c", pg1), said("a", pg2), said("b", pg2)}, 3);
  REQUIRE(e.view);
  CHECK(find_leader(*e.view)->name == "pg2");

  // One each, the third down: no majority of those that answered.
  e = elect_leader({said("a", pg1), said("b", pg2), failed("c", Failure::network, "refused")}, 3);
  REQUIRE_FALSE(e.view);
  CHECK(e.view.error().kind == Failure::protocol);
  CHECK(e.view.error().detail ==
        "Patroni members disagree: no leader is named by more than half of the 2 that answered "
        "(a names pg1 (10.0.0.1:5432); b names pg2 (10.0.0.2:5432); c: refused)");

  // The only member that answers is all of those that answered (its leader must still
  // confirm itself: core/pg_verdict.hpp).
  e = elect_leader(
      {said("a", pg1), failed("b", Failure::timeout, "t"), failed("c", Failure::timeout, "t")}, 3);
  REQUIRE(e.view);
  CHECK(e.agreeing == 1);

  // The same name at another address is another leader.
  e = elect_leader({said("a", pg1), said("b", leading("pg1", "10.0.0.9"))}, 2);
  CHECK_FALSE(e.view);

  // Agreeing that there is no leader is an agreement too.
  e = elect_leader({said("a", leaderless()), said("b", leaderless()), said("c", pg1)}, 3);
  REQUIRE(e.view);
  CHECK(find_leader(*e.view) == nullptr);
}

TEST_CASE("when no member answers, the failure keeps its class", "[core][patroni][election]") {
  auto e = elect_leader({failed("a", Failure::timeout, "no answer before the deadline"),
                         failed("b", Failure::timeout, "no answer before the deadline")},
                        2);
  REQUIRE_FALSE(e.view);
  CHECK(e.view.error().kind == Failure::timeout);
  CHECK(e.view.error().detail ==
        "timeout: no Patroni member answered before the deadline (a: no answer before the "
        "deadline; b: no answer before the deadline)");
  e = elect_leader({failed("a", Failure::timeout, "t"), failed("b", Failure::protocol, "HTTP 500")},
                   2);
  CHECK(e.view.error().kind == Failure::protocol);
  e = elect_leader({failed("a", Failure::network, "refused")}, 1);
  CHECK(e.view.error().kind == Failure::network);
  CHECK(e.view.error().detail == "no Patroni member gave a usable answer (a: refused)");
}

TEST_CASE("the check stops waiting once a majority of the configured agree",
          "[core][patroni][election]") {
  const ClusterView pg1 = leading("pg1", "10.0.0.1");
  CHECK_FALSE(election_decided({said("a", pg1)}, 3));
  CHECK(election_decided({said("a", pg1), said("b", pg1)}, 3));
  CHECK_FALSE(election_decided({said("a", pg1), said("b", leading("pg2", "10.0.0.2"))}, 3));
  CHECK_FALSE(election_decided({said("a", pg1), said("b", pg1)}, 4));
  CHECK(election_decided({said("a", pg1)}, 1));
}

TEST_CASE("a majority's worth of members is asked first, the rest only when they cannot decide",
          "[core][patroni][election]") {
  CHECK(first_round(1) == 1);
  CHECK(first_round(2) == 2);
  CHECK(first_round(3) == 2);
  CHECK(first_round(5) == 3);
  const ClusterView pg1 = leading("pg1", "10.0.0.1");
  const ClusterView pg2 = leading("pg2", "10.0.0.2");
  // Two of three asked: one answer in, one pending: still possible.
  CHECK(election_possible({said("a", pg1)}, 1, 3));
  // They disagree, or one refused: the third must be asked.
  CHECK_FALSE(election_possible({said("a", pg1), said("b", pg2)}, 0, 3));
  CHECK_FALSE(election_possible({said("a", pg1), failed("b", Failure::network, "refused")}, 0, 3));
  CHECK_FALSE(election_possible({failed("a", Failure::timeout, "slow")}, 1, 3));
  // Three of five asked, two agree and one is pending.
  CHECK(election_possible({said("a", pg1), said("b", pg1)}, 1, 5));
  CHECK_FALSE(election_possible({said("a", pg1), said("b", pg2)}, 1, 5));
}
