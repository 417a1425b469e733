// The plan of the Patroni members' GET /cluster rounds: who is asked first, when the others
// are brought in, when the asking stops, and where the leader's own GET /primary is asked.
#include "dbcheck_catch.hpp"

#include <core/patroni_rounds.hpp>
#include <util/format.hpp>

using namespace dbcheck::core;
using namespace std::chrono_literals;
using dbcheck::util::HostPort;
using std::chrono::nanoseconds;

namespace {

// Member i (from 0) is pgN at 10.0.0.N:5432, N = i + 1; its Patroni at http://10.0.0.N:8008.
std::string host_of(std::size_t i) {
  return dbcheck::util::format("10.0.0.{}", i + 1);
}

// A view of `n` members where `leader` ("pg2") holds the lock; "-": none does.
ClusterView view_naming(const std::string& leader, std::size_t n) {
  ClusterView v;
  for (std::size_t i = 0; i < n; ++i) {
    PatroniMember m;
    m.name = dbcheck::util::format("pg{}", i + 1);
    m.role = m.name == leader ? "leader" : "replica";
    m.state = "running";
    m.address = HostPort{host_of(i), 5432};
    v.members.push_back(m);
  }
  return v;
}

// What one member does when asked: "pg1" (names that leader), "-" (names none), "refuses"
// (fails at once) or "hangs" (no answer by the round's end: cut).
MemberAnswer answer_of(const std::string& says, std::size_t member, std::size_t n) {
  const std::string url = dbcheck::util::format("http://{}:8008/cluster", host_of(member));
  if (says == "refuses") {
    return {url, tl::make_unexpected(ProbeError{Failure::network, "Connection refused", ""})};
  }
  if (says == "hangs") {
    return {url, tl::make_unexpected(ProbeError{Failure::timeout, "timed out", ""})};
  }
  return {url, view_naming(says, n)};
}

constexpr nanoseconds k_answer_time{5ms}; // how long each answering member takes

struct Run {
  std::vector<std::vector<std::size_t>> rounds; // the members asked, per round
  std::vector<nanoseconds> waits;
  std::vector<bool> last;
  std::string outcome; // the elected leader, "no view (<kind>)", or "denied: <leader>"
};

// Drives the plan as probe/patroni_client.cpp does, with members answering as `says` and
// `lefts` the time left at each call of next() (10 s after the list).
Run run(std::size_t own_or_none, bool own_denial_decides, const std::vector<std::string>& says,
        const std::vector<nanoseconds>& lefts = {}) {
  const std::size_t n = says.size();
  const std::optional<std::size_t> own =
      own_or_none < n ? std::optional<std::size_t>{own_or_none} : std::nullopt;
  PatroniRounds plan{n, own, own_denial_decides};
  Run out;
  for (std::size_t call = 0;; ++call) {
    const auto round = plan.next(call < lefts.size() ? lefts[call] : nanoseconds{10s});
    if (!round) {
      break;
    }
    out.rounds.push_back(round->members);
    out.waits.push_back(round->wait);
    out.last.push_back(round->last);
    bool enough = false;
    for (const std::size_t i : round->members) {
      if (!enough && says[i] != "hangs") {
        enough = plan.take(i, answer_of(says[i], i, n), k_answer_time);
      }
    }
    for (const std::size_t i : round->members) {
      if (!plan.finished(i)) {
        plan.cut(i, answer_of("hangs", i, n));
      }
    }
    if (const ClusterView* v = plan.own_view_to_check()) {
      if (plan.own_denies(*v, HostPort{host_of(*own), 5432})) {
        out.outcome = "denied: " + leader_label(*v);
        return out;
      }
    }
  }
  const PatroniElection e = elect_leader(plan.answers(), n);
  out.outcome = e.view ? leader_label(*e.view)
                       : dbcheck::util::format("no view ({})", to_string(e.view.error().kind));
  return out;
}

constexpr std::size_t k_none = 99; // no member is the node's own

} // namespace

TEST_CASE("the rounds of GET /cluster, situation by situation", "[core][patroni][rounds]") {
  struct Row {
    const char* situation;
    std::size_t own;
    bool own_denial_decides;
    std::vector<std::string> says;
    std::vector<std::vector<std::size_t>> rounds;
    std::string outcome;
  };
  const std::vector<Row> rows = {
      {"writer: the node's own Patroni names another leader: it alone decides",
       1,
       true,
       {"pg1", "pg1", "pg1"},
       {{1}},
       "denied: pg1 (10.0.0.1:5432)"},
      {"writer: the own Patroni names the node: a majority's worth is made up",
       0,
       true,
       {"pg1", "pg1", "pg1"},
       {{0}, {1}},
       "pg1 (10.0.0.1:5432)"},
      {"writer: the own Patroni names no leader: nothing to deny, the others are asked",
       1,
       true,
       {"-", "-", "-"},
       {{1}, {0}},
       "no leader"},
      {"writer: the own Patroni refuses: the others are asked",
       1,
       true,
       {"pg1", "refuses", "pg1"},
       {{1}, {0}, {2}},
       "pg1 (10.0.0.1:5432)"},
      {"reader: the own Patroni first, a majority's worth agrees, the rest not needed",
       2,
       false,
       {"pg1", "pg1", "pg1"},
       {{2, 0}},
       "pg1 (10.0.0.1:5432)"},
      {"a member refuses: the members not yet asked are asked",
       k_none,
       false,
       {"pg1", "refuses", "pg1"},
       {{0, 1}, {2}},
       "pg1 (10.0.0.1:5432)"},
      {"a refusal ends the round early: the member not yet heard is asked again with the rest",
       k_none,
       false,
       {"refuses", "pg1", "pg1"},
       {{0, 1}, {1, 2}},
       "pg1 (10.0.0.1:5432)"},
      {"the first disagree: the rest decides",
       k_none,
       false,
       {"pg1", "pg2", "pg1"},
       {{0, 1}, {2}},
       "pg1 (10.0.0.1:5432)"},
      {"no majority: every member asked, the election fails",
       k_none,
       false,
       {"pg1", "pg2", "pg3"},
       {{0, 1}, {2}},
       "no view (protocol)"},
      {"a member hangs: cut at the round's end, asked again with the rest",
       k_none,
       false,
       {"pg1", "hangs", "pg1"},
       {{0, 1}, {1, 2}},
       "pg1 (10.0.0.1:5432)"},
      {"every member hangs: the failure is a timeout",
       k_none,
       false,
       {"hangs", "hangs", "hangs"},
       {{0, 1}, {0, 1, 2}},
       "no view (timeout)"},
      {"one member: the first round is the last",
       k_none,
       false,
       {"pg1"},
       {{0}},
       "pg1 (10.0.0.1:5432)"},
      {"five members: three first, then the two others",
       k_none,
       false,
       {"pg1", "pg1", "refuses", "pg1", "pg2"},
       {{0, 1, 2}, {3, 4}},
       "pg1 (10.0.0.1:5432)"},
  };
  for (const auto& row : rows) {
    INFO(row.situation);
    const Run r = run(row.own, row.own_denial_decides, row.says);
    CHECK(r.rounds == row.rounds);
    CHECK(r.outcome == row.outcome);
  }
}

TEST_CASE("a round waits a third of the time left, at most 250 ms; the last gets all of it",
          "[core][patroni][rounds]") {
  Run r = run(k_none, false, {"refuses", "pg1", "pg1"}, {nanoseconds{3s}, nanoseconds{2s}});
  REQUIRE(r.waits.size() == 2);
  CHECK(r.waits[0] == k_first_round_wait);
  CHECK_FALSE(r.last[0]);
  CHECK(r.waits[1] == nanoseconds{2s});
  CHECK(r.last[1]);

  r = run(k_none, false, {"refuses", "pg1", "pg1"}, {nanoseconds{300ms}});
  CHECK(r.waits[0] == nanoseconds{100ms});
}

TEST_CASE("once a member answered with its view, a round waits four times the fastest such answer",
          "[core][patroni][rounds]") {
  // A writer check: its own Patroni answers alone, then the first other member hangs (cut
  // off from its DCS); the round ends at 4 x the own answer's time, between 50 and 250 ms.
  for (const auto& [own_took, wait] :
       std::vector<std::pair<nanoseconds, nanoseconds>>{{nanoseconds{5ms}, nanoseconds{50ms}},
                                                        {nanoseconds{40ms}, nanoseconds{160ms}},
                                                        {nanoseconds{100ms}, nanoseconds{250ms}}}) {
    INFO(own_took.count());
    PatroniRounds plan{3, 0, true};
    REQUIRE(plan.next(nanoseconds{3s}));
    CHECK(plan.take(0, answer_of("pg1", 0, 3), own_took)); // alone in its round
    const auto second = plan.next(nanoseconds{3s});
    REQUIRE(second);
    CHECK(second->members == std::vector<std::size_t>{1});
    CHECK(second->wait == wait);
    plan.cut(1, answer_of("hangs", 1, 3));
    const auto last = plan.next(nanoseconds{2s});
    REQUIRE(last);
    CHECK(last->last);
    CHECK(last->members == std::vector<std::size_t>{1, 2});
  }
  // A refusal is no answer with a view: it does not shorten the wait.
  PatroniRounds plan{3, 0, true};
  REQUIRE(plan.next(nanoseconds{3s}));
  CHECK(plan.take(0, answer_of("refuses", 0, 3), nanoseconds{1ms}));
  const auto second = plan.next(nanoseconds{3s});
  REQUIRE(second);
  CHECK(second->wait == k_first_round_wait);
  // Little time left: a third of it, even below the least wait.
  PatroniRounds late{3, 0, true};
  REQUIRE(late.next(nanoseconds{3s}));
  CHECK(late.take(0, answer_of("pg1", 0, 3), nanoseconds{5ms}));
  const auto short_round = late.next(nanoseconds{90ms});
  REQUIRE(short_round);
  CHECK(short_round->wait == nanoseconds{30ms});
}

TEST_CASE("no time left: the first round is still asked, no other", "[core][patroni][rounds]") {
  // The first round with no time: its members time out at once, and that is the answer.
  Run r = run(k_none, false, {"hangs", "hangs", "pg1"}, {nanoseconds{0}, nanoseconds{0}});
  CHECK(r.rounds == std::vector<std::vector<std::size_t>>{{0, 1}});
  CHECK(r.waits[0] == nanoseconds{0});
  CHECK(r.outcome == "no view (timeout)");

  // The deadline passes during the first round: the rest is not asked.
  r = run(k_none, false, {"pg1", "refuses", "pg1"}, {nanoseconds{1s}, nanoseconds{-1ms}});
  CHECK(r.rounds == std::vector<std::vector<std::size_t>>{{0, 1}});
  CHECK(r.outcome == "pg1 (10.0.0.1:5432)"); // the one usable answer (no quorum: the caller's)
}

TEST_CASE("the own Patroni's denial needs a leader that resolved and is not the node",
          "[core][patroni][rounds]") {
  PatroniRounds plan{3, 1, true};
  const auto round = plan.next(nanoseconds{1s});
  REQUIRE(round);
  CHECK(round->own_alone);
  CHECK(round->members == std::vector<std::size_t>{1});
  // Its round has nothing more to wait for.
  CHECK(plan.take(1, answer_of("pg1", 1, 3), k_answer_time));
  const ClusterView* own = plan.own_view_to_check();
  REQUIRE(own != nullptr);
  ClusterView resolved = *own;
  resolved.members[0].unresolved = "pg1.example did not resolve: no such name";
  CHECK_FALSE(plan.own_denies(resolved, HostPort{"10.0.0.2", 5432}));
  // Not denied: the rounds go on.
  const auto second = plan.next(nanoseconds{1s});
  REQUIRE(second);
  CHECK_FALSE(second->own_alone);
  CHECK(plan.own_view_to_check() == nullptr);
}

TEST_CASE("what was asked is reported in asking order; the shared answer is the first agreeing",
          "[core][patroni][rounds]") {
  PatroniRounds plan{3, 2, false};
  CHECK(plan.order() == std::vector<std::size_t>{2, 0, 1});
  const auto round = plan.next(nanoseconds{1s});
  REQUIRE(round);
  CHECK_FALSE(plan.take(2, answer_of("pg2", 2, 3), k_answer_time));
  CHECK(
      plan.take(0, answer_of("pg1", 0, 3), k_answer_time)); // they disagree: member 1 must be asked
  REQUIRE(plan.next(nanoseconds{1s}));
  CHECK(plan.take(1, answer_of("pg1", 1, 3), k_answer_time));
  CHECK_FALSE(plan.next(nanoseconds{1s}));
  const auto answers = plan.answers();
  REQUIRE(answers.size() == 3);
  CHECK(answers[0].url == "http://10.0.0.3:8008/cluster");
  const PatroniElection e = elect_leader(answers, 3);
  REQUIRE(e.view);
  CHECK(plan.first_agreeing(*e.view) == std::optional<std::size_t>{0});
  CHECK(plan.answer(1).has_value());
}

TEST_CASE("the node's own Patroni is the one configured on its host, when only one is",
          "[core][patroni][rounds]") {
  const std::vector<std::string> bases = {"http://10.0.0.1:8008", "https://u:p@10.0.0.2:8008",
                                          "http://[fd00::3]:8008"};
  CHECK(own_member(bases, HostPort{"10.0.0.2", 5432}) == std::optional<std::size_t>{1});
  CHECK(own_member(bases, HostPort{"fd00::3", 5432}) == std::optional<std::size_t>{2});
  CHECK(own_member(bases, HostPort{"10.0.0.9", 5432}) == std::nullopt);
  // One host for every member (a lab): none is told apart.
  CHECK(own_member({"http://127.0.0.1:8008", "http://127.0.0.1:8009"},
                   HostPort{"127.0.0.1", 5432}) == std::nullopt);
}

TEST_CASE("the leader's own GET /primary is asked at the configured URL that reaches it",
          "[core][patroni][rounds]") {
  PatroniMember leader;
  leader.name = "pg1";
  leader.address = HostPort{"10.0.0.1", 5432};
  leader.api_url = "http://10.0.0.1:8008/patroni";
  const std::vector<std::string> bases = {"https://u:p@pg1.example:8008", "http://10.0.0.1:8008"};
  auto b = leader_base(leader, bases);
  REQUIRE(b);
  CHECK(b->url == "http://10.0.0.1:8008");
  CHECK(b->why == "its api_url");

  // A NAT address in api_url: the configured URL on the leader's host.
  leader.api_url = "http://172.17.0.2:8008/patroni";
  b = leader_base(leader, bases);
  REQUIRE(b);
  CHECK(b->url == "http://10.0.0.1:8008");
  CHECK_THAT(b->why, dbcheck_test::Contains("the configured URL on its host"));

  // Advertised by name, resolved to an address no URL is on: the name's URL.
  leader.advertised = "pg1.example";
  leader.address = HostPort{"10.9.9.9", 5432};
  b = leader_base(leader, bases);
  REQUIRE(b);
  CHECK(b->url == "https://u:p@pg1.example:8008");

  // No configured URL on its host: its api_url; none usable: nullopt.
  leader.advertised.clear();
  b = leader_base(leader, bases);
  REQUIRE(b);
  CHECK(b->url == "http://172.17.0.2:8008");
  leader.api_url = "";
  CHECK_FALSE(leader_base(leader, bases));
}
