// The resolver with a deadline (probe/name_resolver.hpp), against this host's own /etc/hosts:
// a known name, a name that cannot exist, and a deadline that has already passed. A resolver
// that hangs is tested against a silent DNS server in tests/integration/test_host_names.py.
#include "dbcheck_catch.hpp"

#include <probe/name_resolver.hpp>

#include <algorithm>

using namespace dbcheck;
using namespace std::chrono_literals;

TEST_CASE("localhost resolves through the system's resolver", "[probe][names]") {
  const auto answers =
      probe::resolve_names({"localhost"}, probe::Deadline::in(util::Duration{5000}));
  REQUIRE(answers.size() == 1);
  CHECK(answers[0].name == "localhost");
  REQUIRE(answers[0].addresses);
  const auto& a = *answers[0].addresses;
  CHECK(std::find(a.begin(), a.end(), "127.0.0.1") != a.end());
}

TEST_CASE("a name that cannot exist answers why, in order with the others", "[probe][names]") {
  // RFC 6761: .invalid never resolves (answered locally or by any DNS server: NXDOMAIN).
  const auto answers = probe::resolve_names({"no-such-host.invalid", "localhost"},
                                            probe::Deadline::in(util::Duration{5000}));
  REQUIRE(answers.size() == 2);
  CHECK(answers[0].name == "no-such-host.invalid");
  CHECK_FALSE(answers[0].addresses);
  CHECK(answers[1].addresses);
}

TEST_CASE("a deadline already passed still answers every name", "[probe][names]") {
  const auto answers = probe::resolve_names({"localhost", "no-such-host.invalid"},
                                            probe::Deadline{probe::Clock::now() - 1s});
  REQUIRE(answers.size() == 2);
  // Each either finished at once (/etc/hosts) or says it had no time: nothing hangs.
  for (const auto& a : answers) {
    CHECK((a.addresses || !a.addresses.error().empty()));
  }
}

TEST_CASE("no names, no lookups", "[probe][names]") {
  CHECK(probe::resolve_names({}, probe::Deadline::in(util::Duration{1000})).empty());
}
