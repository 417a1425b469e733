// Asking the Patroni members through scripted peers (fake_peers.hpp): the rounds' deadlines and
// the shared view's age are read on the checks' clock (Peers::now()), so the test moves it.
#include "dbcheck_catch.hpp"
#include "fake_peers.hpp"

#include <probe/patroni_client.hpp>

using namespace dbcheck;
using namespace std::chrono_literals;
using probe::Clock;
using probe::Deadline;
using testing::FakePeers;

namespace {

constexpr const char* k_cluster = testing::k_two_member_cluster;
constexpr const char* k_primary = testing::k_pg1_primary;

const std::vector<std::string> k_two = {"http://10.0.0.1:8008", "http://10.0.0.2:8008"};
const std::vector<std::string> k_three = {"http://10.0.0.1:8008", "http://10.0.0.2:8008",
                                          "http://10.0.0.3:8008"};

probe::HttpReply answer(const std::string& url) {
  return testing::http_ok(url.ends_with("/primary") ? k_primary : k_cluster);
}

// The deadline of the first question whose text starts with `prefix`.
Clock::time_point asked_by(FakePeers& f, const std::string& prefix) {
  const int i = f.first(prefix);
  REQUIRE(i >= 0);
  return f.log().at(static_cast<std::size_t>(i)).by;
}

} // namespace

TEST_CASE("the shared view's age counts from when the members were asked",
          "[probe][patroni][shared_view]") {
  FakePeers f;
  f.answer_takes = 40ms; // each question, the look for a shared view included
  f.http = answer;
  const probe::ShareSettings share{"", 1000ms, true};
  const auto r =
      probe::ask_patroni(f, k_two, {}, std::nullopt, Deadline{f.now() + 2s}, false, share);
  CHECK(r.quorum);
  REQUIRE(f.shares.size() == 1);
  // The two GETs, not the look for a shared view before them.
  CHECK(f.shares[0].asked_before == 80ms);
}

TEST_CASE("the first round gets a third of the time left on the checks' clock; the last all of it",
          "[probe][patroni]") {
  FakePeers f;
  f.http = [](const std::string& url) {
    if (url.starts_with("http://10.0.0.2:")) {
      probe::HttpReply refused;
      refused.attempt.error = "Connection refused";
      return refused;
    }
    return answer(url);
  };
  const Deadline deadline{f.now() + 900ms};
  f.sleep_for(300ms); // the check spent this before asking: 600 ms are left
  const auto asked_at = f.now();
  const auto r = probe::ask_patroni(f, k_three, {}, std::nullopt, deadline);
  REQUIRE(r.view);
  CHECK(asked_by(f, "get http://10.0.0.1:8008/cluster") == asked_at + 200ms);
  CHECK(asked_by(f, "get http://10.0.0.2:8008/cluster") == asked_at + 200ms);
  CHECK(asked_by(f, "get http://10.0.0.3:8008/cluster") == deadline.at());
}

TEST_CASE("a writer's members leave a quarter of the time, on the checks' clock, to /primary",
          "[probe][patroni]") {
  FakePeers f;
  f.http = answer;
  const Deadline deadline{f.now() + 4s};
  const auto r =
      probe::ask_patroni_for_writer(f, k_two, {}, util::HostPort{"10.0.0.1", 5432}, deadline);
  REQUIRE(r.leader_report);
  CHECK(r.leader_report->has_value());
  // The own Patroni alone first (a short wait), then the other until the members' deadline.
  CHECK(asked_by(f, "get http://10.0.0.1:8008/cluster") == deadline.at() - 4s + 250ms);
  CHECK(asked_by(f, "get http://10.0.0.2:8008/cluster") == deadline.at() - 1s);
  CHECK(asked_by(f, "get http://10.0.0.1:8008/primary") == deadline.at());
}
