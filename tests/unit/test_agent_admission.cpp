// The agent-check port's admission policy (agent/admission.hpp), one row per decision.
#include "admission.hpp"
#include "dbcheck_catch.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

using namespace dbcheck::agent;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// "admitted", or the reason's name: a row's expectation reads as the log and /metrics say it.
std::string verdict(std::optional<Drop> why) {
  return why ? std::string{k_drop_names[static_cast<std::size_t>(*why)]} : "admitted";
}

AdmissionLimits limits(std::size_t max_connections, std::size_t per_address,
                       std::size_t waiting_total = k_waiting_total,
                       std::size_t waiting_per_address = k_waiting_per_address) {
  return {max_connections, per_address, waiting_total, waiting_per_address};
}

} // namespace

TEST_CASE("Drop's names follow its order", "[agent][admission]") {
  CHECK(verdict(Drop::limit) == "limit");
  CHECK(verdict(Drop::write_timeout) == "write_timeout");
  CHECK(verdict(Drop::accept_error) == "accept_error");
  CHECK(verdict(Drop::not_allowed) == "not_allowed");
  CHECK(verdict(Drop::address_limit) == "address_limit");
}

TEST_CASE("at accept: not allowed, then the total limit, then the address's",
          "[agent][admission]") {
  struct Row {
    const char* name;
    Arrival arrival; // allowed, open, open_from_peer
    AdmissionLimits limits;
    const char* expect;
  };
  const AdmissionLimits small = limits(10, 3);
  const std::vector<Row> rows = {
      {"allowed, nothing open", {true, 0, 0}, small, "admitted"},
      {"not allowed, nothing open", {false, 0, 0}, small, "not_allowed"},
      {"not allowed comes before both limits", {false, 10, 3}, small, "not_allowed"},
      {"one under the total limit", {true, 9, 0}, small, "admitted"},
      {"at the total limit", {true, 10, 0}, small, "limit"},
      {"one over the total limit", {true, 11, 0}, small, "limit"},
      {"the total limit comes before the address's", {true, 10, 3}, small, "limit"},
      {"one under the address limit", {true, 5, 2}, small, "admitted"},
      {"at the address limit", {true, 5, 3}, small, "address_limit"},
      {"one over the address limit", {true, 5, 4}, small, "address_limit"},
      {"a zero total limit refuses all", {true, 0, 0}, limits(0, 3), "limit"},
      {"a zero address limit refuses all", {true, 0, 0}, limits(10, 0), "address_limit"},
      {"the default address limit: 1023 open",
       {true, 1023, 1023},
       limits(4096, k_per_address),
       "admitted"},
      {"the default address limit: 1024 open",
       {true, 1024, 1024},
       limits(4096, k_per_address),
       "address_limit"},
  };
  for (const Row& r : rows) {
    CAPTURE(r.name);
    CHECK(verdict(refuse_at_accept(r.arrival, r.limits)) == r.expect);
  }
}

TEST_CASE("waiting for a line: refused only with both limits reached", "[agent][admission]") {
  struct Row {
    const char* name;
    std::size_t waiting;
    std::size_t waiting_from_peer;
    AdmissionLimits limits;
    const char* expect;
  };
  const AdmissionLimits small = limits(100, 100, 4, 2);
  const std::vector<Row> rows = {
      {"nothing waits", 0, 0, small, "admitted"},
      {"one address at its limit while the total is under", 3, 3, small, "admitted"},
      {"total at its limit, the address one under", 4, 1, small, "admitted"},
      {"a crowd over the total, this address new", 10, 0, small, "admitted"},
      {"both at their limits", 4, 2, small, "address_limit"},
      {"both one over", 5, 3, small, "address_limit"},
      {"zero limits refuse all", 0, 0, limits(100, 100, 0, 0), "address_limit"},
      {"the defaults: 1024 waiting, 63 from the address", k_waiting_total, 63, limits(4096, 1024),
       "admitted"},
      {"the defaults: 1024 waiting, 64 from the address", k_waiting_total, k_waiting_per_address,
       limits(4096, 1024), "address_limit"},
      {"the defaults: 1023 waiting, all from the address", 1023, 1023, limits(4096, 1024),
       "admitted"},
  };
  for (const Row& r : rows) {
    CAPTURE(r.name);
    CHECK(verdict(refuse_waiting(r.waiting, r.waiting_from_peer, r.limits)) == r.expect);
  }
}

TEST_CASE("a refusal for who sent it resets; one for the total limit closes",
          "[agent][admission]") {
  const auto [why, reset] = GENERATE(table<Drop, bool>({
      {Drop::not_allowed, true},
      {Drop::address_limit, true},
      {Drop::limit, false},
      {Drop::write_timeout, false},
      {Drop::accept_error, false},
  }));
  CAPTURE(verdict(why));
  CHECK(reset_on_refusal(why) == reset);
}

TEST_CASE("drops are logged at once, then once per 10 s per reason with the count since",
          "[agent][admission]") {
  struct Step {
    Clock::duration at;
    Drop why;
    std::optional<std::uint64_t> logged; // the count the line carries; none: no line
  };
  const Clock::time_point t0 = Clock::time_point{} + 1h;
  const std::vector<Step> steps = {
      {0s, Drop::limit, 1},                // the first: at once
      {1s, Drop::limit, std::nullopt},     // counted for the next line
      {9999ms, Drop::limit, std::nullopt}, // a millisecond short of the period
      {10s, Drop::limit, 3},               // exactly one period later: the three since
      {10s, Drop::not_allowed, 1},         // another reason has its own period
      {11s, Drop::not_allowed, std::nullopt},
      {19999ms, Drop::limit, std::nullopt},
      {20s, Drop::limit, 2},
      {21s, Drop::not_allowed, 2}, // over a period since its own last line
      {1h, Drop::limit, 1},        // after a quiet hour: at once, itself alone
      {1h + 1ms, Drop::write_timeout, 1},
      {1h + 2ms, Drop::write_timeout, std::nullopt},
  };
  DropLog log;
  for (const Step& s : steps) {
    CAPTURE(std::chrono::duration_cast<std::chrono::milliseconds>(s.at).count(), verdict(s.why));
    CHECK(log.count(s.why, t0 + s.at) == s.logged);
  }
}

TEST_CASE("the first drop is logged whatever the clock reads", "[agent][admission]") {
  DropLog log;
  CHECK(log.count(Drop::limit, Clock::time_point{}) == std::optional<std::uint64_t>{1});
  CHECK(log.count(Drop::limit, Clock::time_point{} + 1s) == std::nullopt);
}

TEST_CASE("per-address counts go up, come back down, and forget an address at zero",
          "[agent][admission]") {
  struct Step {
    const char* what; // "+a": one more from a; "-a": one fewer
    std::size_t of_a;
    std::size_t of_b;
    std::size_t total;
    std::size_t peers;
  };
  const std::vector<Step> steps = {
      {"+a", 1, 0, 1, 1}, {"+a", 2, 0, 2, 1}, {"+b", 2, 1, 3, 2}, {"-a", 1, 1, 2, 2},
      {"-b", 1, 0, 1, 1}, {"-b", 1, 0, 1, 1}, // b is no longer counted: nothing to take away
      {"-a", 0, 0, 0, 0}, {"-a", 0, 0, 0, 0}, {"+b", 0, 1, 1, 1},
  };
  PeerCounts<std::string> counts;
  int n = 0;
  for (const Step& s : steps) {
    CAPTURE(++n, s.what);
    const std::string peer{s.what + 1};
    if (s.what[0] == '+') {
      counts.add(peer);
    } else {
      counts.remove(peer);
    }
    CHECK(counts.of("a") == s.of_a);
    CHECK(counts.of("b") == s.of_b);
    CHECK(counts.total() == s.total);
    CHECK(counts.peers() == s.peers);
  }
}

TEST_CASE("a port's counters: an address at its limit is let in again once one closes",
          "[agent][admission]") {
  struct Step {
    const char* what; // "hold", "release", or "ask" (admission of one more)
    const char* peer;
    const char* expect; // for "ask"
    std::size_t open;
  };
  const AdmissionLimits l = limits(3, 2);
  const std::vector<Step> steps = {
      {"ask", "a", "admitted", 0},      {"hold", "a", "", 1},        {"hold", "a", "", 2},
      {"ask", "a", "address_limit", 2}, {"ask", "b", "admitted", 2}, {"hold", "b", "", 3},
      {"ask", "b", "limit", 3},         {"release", "a", "", 2},     {"ask", "a", "admitted", 2},
      {"ask", "b", "admitted", 2},      {"release", "a", "", 1},     {"release", "b", "", 0},
      {"ask", "a", "admitted", 0},
  };
  PortCounters<std::string> c;
  int n = 0;
  for (const Step& s : steps) {
    CAPTURE(++n, s.what, s.peer);
    const std::string what{s.what};
    if (what == "hold") {
      c.hold(s.peer);
    } else if (what == "release") {
      c.release(s.peer);
    } else {
      const Arrival a{true, c.open(), c.by_address.of(s.peer)};
      CHECK(verdict(refuse_at_accept(a, l)) == s.expect);
    }
    CHECK(c.open() == s.open);
    CHECK(c.by_address.total() == s.open);
  }
  CHECK(c.by_address.peers() == 0);
}

TEST_CASE("a port's drops are counted every time, logged when due, and all named",
          "[agent][admission]") {
  PortCounters<std::string> c;
  const Clock::time_point t0 = Clock::time_point{} + 1h;
  const std::map<std::string, std::uint64_t> none = {{"limit", 0},
                                                     {"write_timeout", 0},
                                                     {"accept_error", 0},
                                                     {"not_allowed", 0},
                                                     {"address_limit", 0}};
  CHECK(c.dropped() == none);
  CHECK(c.drop(Drop::limit, t0) == std::optional<std::uint64_t>{1});
  CHECK(c.drop(Drop::limit, t0 + 1s) == std::nullopt);
  CHECK(c.drop(Drop::address_limit, t0 + 1s) == std::optional<std::uint64_t>{1});
  CHECK(c.drop(Drop::limit, t0 + 10s) == std::optional<std::uint64_t>{2});
  CHECK(c.dropped(Drop::limit) == 3);
  auto expect = none;
  expect["limit"] = 3;
  expect["address_limit"] = 1;
  CHECK(c.dropped() == expect);
}
