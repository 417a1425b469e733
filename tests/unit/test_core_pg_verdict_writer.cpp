// The writer's verdict (evaluate_writer): every combination of the members', the leader's own
// Patroni's and the node's answers and their error kinds, the reasons, saturation, whom a round
// names, and the write probe's outcome.
#include "dbcheck_catch.hpp"
#include "pg_verdict_fixtures.hpp"

#include <core/health_tracker.hpp>
#include <core/pg_verdict.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace dbcheck::core;
using namespace dbcheck::testing::pg_verdict;
using dbcheck::util::HostPort;

namespace {

// Expected "U"/"D" + failure for node (row) x manager (column), on_saturation = up.
struct Cell {
  State state;
  Failure failure;
};
constexpr Cell U{State::up, Failure::none};
constexpr Cell D_role{State::down, Failure::role};
constexpr Cell D_to{State::down, Failure::timeout};
constexpr Cell D_net{State::down, Failure::network};
constexpr Cell D_proto{State::down, Failure::protocol};
constexpr Cell D_auth{State::down, Failure::auth};
constexpr Cell D_sat{State::down, Failure::saturated};
constexpr Cell U_sat{State::up, Failure::saturated};
constexpr Cell D_nr{State::down, Failure::not_ready};
constexpr Cell R = D_role;

const std::vector<std::string> k_columns = {"self",    "other",   "none",   "standby",
                                            "timeout", "network", "garbage"};
// Either opinion saying "not this node" wins (role) whatever the other's state: damping must
// never keep an old primary in the write pool.
const std::map<std::string, std::vector<Cell>> k_writer_table = {
    //              self    other none standby timeout network garbage
    {"rw", {U, R, R, R, D_to, D_net, D_proto}},
    {"recovery", {R, R, R, R, R, R, R}},
    {"readonly", {R, R, R, R, R, R, R}},
    {"timeout", {D_to, R, R, R, D_to, D_to, D_to}},
    {"refused", {D_net, R, R, R, D_net, D_net, D_net}},
    {"auth", {D_auth, R, R, R, D_auth, D_auth, D_auth}},
    {"saturated", {U_sat, R, R, R, D_to, D_net, D_proto}},
    {"notready", {D_nr, R, R, R, D_nr, D_nr, D_nr}},
};

} // namespace

TEST_CASE("writer: every node answer x every manager answer", "[core][verdict][writer]") {
  for (const auto& [node_name, row] : k_writer_table) {
    for (std::size_t c = 0; c < k_columns.size(); ++c) {
      CAPTURE(node_name, k_columns[c]);
      const Verdict v = evaluate_writer(writer_obs(k_columns[c], node_name), SaturationPolicy::up);
      CHECK(v.state == row[c].state);
      CHECK(v.failure == row[c].failure);
      // "not the writer" only when an opinion says so: a node that cannot be asked has not.
      CHECK((v.reason.rfind("not the writer: ", 0) == 0) == (v.failure == Failure::role));
    }
  }
}

TEST_CASE("writer: the leader's own Patroni must confirm it", "[core][verdict][writer]") {
  const std::vector<std::pair<std::string, Cell>> rows = {
      {"confirms", U}, {"confirms4", U},       {"refused", D_net}, {"timeout", D_to},
      {"no lock", R},  {"http 500", D_proto},  {"replica", R},     {"stopped", D_nr},
      {"renamed", R},  {"not asked", D_proto},
  };
  for (const auto& [report, cell] : rows) {
    CAPTURE(report);
    for (const char* node : {"rw", "saturated"}) {
      CAPTURE(node);
      const Verdict v = evaluate_writer(writer_obs("self", node, report), SaturationPolicy::up);
      const bool sat = std::string{node} == "saturated";
      CHECK(v.state == cell.state);
      CHECK(v.failure == (sat && cell.state == State::up ? Failure::saturated : cell.failure));
    }
    // A node that says it is not the primary wins over any report.
    CHECK(evaluate_writer(writer_obs("self", "recovery", report), SaturationPolicy::up).failure ==
          Failure::role);
  }
  CHECK(evaluate_writer(writer_obs("self", "rw", "no lock"), SaturationPolicy::up).reason ==
        "not the writer: Patroni names this node (pg1) leader, but its own Patroni answers GET "
        "/primary 503 (it does not hold the leader lock; role master, state running); "
        "PostgreSQL is read-write, not in recovery");
  CHECK(evaluate_writer(writer_obs("self", "rw", "refused"), SaturationPolicy::up).reason ==
        "cannot reach this node's Patroni: http://10.0.0.1:8008/primary: Connection refused "
        "(Patroni names this node (pg1) leader, unconfirmed: unmanaged leader?); PostgreSQL is "
        "read-write, not in recovery");
  CHECK(evaluate_writer(writer_obs("self", "rw", "stopped"), SaturationPolicy::up).reason ==
        "PostgreSQL not ready: its own Patroni says it is stopped (Patroni names this node (pg1) "
        "leader); PostgreSQL is read-write, not in recovery");
}

TEST_CASE("writer: a full server seen over a kept connection is saturated",
          "[core][verdict][writer]") {
  const auto full_node = NodeRole{false, false, 47, 47, k_sysid};
  const WriterObservation full{k_self, managers().at("self"), full_node, confirming()};
  const Verdict up = evaluate_writer(full, SaturationPolicy::up);
  CHECK(up.state == State::up);
  CHECK(up.failure == Failure::saturated);
  CHECK(up.reason ==
        "saturated: Patroni names this node (pg1) leader, confirmed by its own Patroni (GET "
        "/primary 200: holds the leader lock, running master); PostgreSQL is read-write but "
        "full: 47 of 47 connections in use; on_saturation=up keeps the sole writer in rotation");
  CHECK(evaluate_writer(full, SaturationPolicy::down).state == State::down);
  const WriterObservation room{k_self, managers().at("self"),
                               NodeRole{false, false, 46, 47, k_sysid}, confirming()};
  CHECK(evaluate_writer(room, SaturationPolicy::up).failure == Failure::none);
  const WriterObservation other{k_self,      managers().at("other"), full_node, std::nullopt, false,
                                std::nullopt};
  CHECK(evaluate_writer(other, SaturationPolicy::up).state == State::down);
}

TEST_CASE("writer: saturation never passes on one opinion", "[core][verdict][writer]") {
  // The node refused the check's connection (53300): only the leader's own Patroni, which
  // queries PostgreSQL over its own connection, can still say it is the primary.
  const Verdict unconfirmed =
      evaluate_writer(writer_obs("self", "saturated", "timeout"), SaturationPolicy::up);
  CHECK(unconfirmed.state == State::down);
  CHECK(unconfirmed.failure == Failure::timeout);
  const Verdict stale =
      evaluate_writer(writer_obs("self", "saturated", "no lock"), SaturationPolicy::up);
  CHECK(stale.state == State::down);
  CHECK(stale.failure == Failure::role);
}

TEST_CASE("writer: on_saturation = down ejects a saturated leader", "[core][verdict][writer]") {
  const Verdict v = evaluate_writer(writer_obs("self", "saturated"), SaturationPolicy::down);
  CHECK(v.state == State::down);
  CHECK(v.failure == Failure::saturated);
  CHECK(v.reason == "saturated: Patroni names this node (pg1) leader, confirmed by its own "
                    "Patroni (GET /primary 200: holds the leader lock, running master); "
                    "PostgreSQL full: 53300: FATAL: sorry, too many clients already; "
                    "on_saturation=down");
}

TEST_CASE("writer: reasons name both opinions", "[core][verdict][writer]") {
  const std::string confirmed =
      "Patroni names this node (pg1) leader, confirmed by its own Patroni (GET /primary 200: "
      "holds the leader lock, running master)";
  CHECK(evaluate_writer(writer_obs("self", "rw"), SaturationPolicy::up).reason ==
        confirmed + "; PostgreSQL is read-write, not in recovery");
  // The split-brain case: the old primary still says it is writable, Patroni disagrees.
  CHECK(evaluate_writer(writer_obs("other", "rw"), SaturationPolicy::up).reason ==
        "not the writer: Patroni names pg2 (10.0.0.2:5432) leader, not this node; PostgreSQL "
        "is read-write, not in recovery");
  // Patroni holds the lock, PostgreSQL has not finished promoting (patroni #3603).
  CHECK(evaluate_writer(writer_obs("self", "recovery"), SaturationPolicy::up).reason ==
        "not the writer: PostgreSQL is in recovery (a standby, or a promotion not yet "
        "finished); " +
            confirmed);
  // A node that cannot be asked has said nothing about its role: the failure leads.
  CHECK(evaluate_writer(writer_obs("self", "timeout"), SaturationPolicy::up).reason ==
        "PostgreSQL timed out: no answer before the deadline (connecting); " + confirmed);
  CHECK(evaluate_writer(writer_obs("self", "auth"), SaturationPolicy::up).reason ==
        "cannot log in to PostgreSQL: 28P01: FATAL: password authentication failed for user "
        "\"healthcheck\"; " +
            confirmed);
  CHECK(evaluate_writer(writer_obs("self", "refused"), SaturationPolicy::up).reason ==
        "cannot reach PostgreSQL: Connection refused; " + confirmed);
  CHECK(evaluate_writer(writer_obs("self", "notready"), SaturationPolicy::up).reason ==
        "PostgreSQL not ready: 57P03: FATAL: the database system is starting up; " + confirmed);
  CHECK(evaluate_writer(writer_obs("timeout", "rw"), SaturationPolicy::up).reason ==
        "Patroni timed out: no Patroni member answered before the deadline; PostgreSQL is "
        "read-write, not in recovery");
  CHECK(evaluate_writer(writer_obs("garbage", "rw"), SaturationPolicy::up).reason ==
        "unusable answer from Patroni: no Patroni member gave a usable answer (HTTP 500); "
        "PostgreSQL is read-write, not in recovery");
  CHECK(evaluate_writer(writer_obs("none", "rw"), SaturationPolicy::up).reason ==
        "not the writer: Patroni names no leader (failover in progress or DCS trouble); "
        "PostgreSQL is read-write, not in recovery");
  CHECK(evaluate_writer(writer_obs("standby", "recovery"), SaturationPolicy::up).reason ==
        "not the writer: Patroni: this node leads a standby cluster "
        "(standby_leader), not writable; PostgreSQL is in recovery (a standby, or "
        "a promotion not yet finished)");
  CHECK(evaluate_writer(writer_obs("self", "saturated"), SaturationPolicy::up).reason ==
        "saturated: " + confirmed +
            "; PostgreSQL full: 53300: FATAL: sorry, too many clients already; on_saturation=up "
            "keeps the sole writer in rotation");
  // Saturated, but Patroni could not be asked: Patroni's failure leads.
  CHECK(evaluate_writer(writer_obs("timeout", "saturated"), SaturationPolicy::up).reason ==
        "Patroni timed out: no Patroni member answered before the deadline; PostgreSQL full: "
        "53300: FATAL: sorry, too many clients already");
}

TEST_CASE("writer: a leader name resolving to another member's address is not a writer",
          "[core][verdict][writer]") {
  // A stale /etc/hosts entry points pg1's name at pg2's host; pg2, an old primary still
  // read-write there, must not pass on Patroni's word.
  PatroniMember leader = member("pg1", "leader", "10.0.0.2");
  leader.advertised = "pg1.example";
  const Manager view = view_with({leader, member("pg2", "replica", "10.0.0.2")});
  const Verdict v = evaluate_writer(
      WriterObservation{HostPort{"10.0.0.2", 5432}, view,
                        tl::make_unexpected(ProbeError{Failure::network, "refused", ""}),
                        std::nullopt, true, std::nullopt},
      SaturationPolicy::up);
  CHECK(v.state == State::down);
  CHECK_THAT(v.reason,
             dbcheck_test::Contains("Patroni names pg1 (pg1.example = 10.0.0.2:5432) leader, "
                                    "but its name resolves to the address of member pg2"));
}

TEST_CASE("writer: the whole table through the agent's tracker", "[core][verdict][writer]") {
  // An old primary must leave at the first round that says "not this node", whatever the
  // other opinion did; only uncertainty is damped by fall.
  const Verdict was_up = evaluate_writer(writer_obs("self", "rw"), SaturationPolicy::up);
  REQUIRE(passes(was_up));
  for (const auto& [node_name, row] : k_writer_table) {
    for (std::size_t c = 0; c < k_columns.size(); ++c) {
      CAPTURE(node_name, k_columns[c]);
      const Verdict raw =
          evaluate_writer(writer_obs(k_columns[c], node_name), SaturationPolicy::up);
      HealthTracker t(TrackerPolicy{3, 2, dbcheck::util::Duration{5000}, true});
      t.observe(was_up, dbcheck::util::Duration{0});
      t.observe(raw, dbcheck::util::Duration{1000});
      if (passes(raw)) {
        CHECK(t.reported().state == State::up);
      } else if (raw.failure == Failure::role) {
        CHECK(t.reported().state == State::down);
      } else {
        CHECK(t.reported().state == State::up); // failing 1 of 2
        t.observe(raw, dbcheck::util::Duration{2000});
        CHECK(t.reported().state == State::down);
      }
    }
  }
}

TEST_CASE("writer: a round says whom the members named", "[core][verdict][writer]") {
  // The agent's rise rule follows it (core/health_tracker.hpp), whatever the node says and
  // whatever the leader's own Patroni says of itself.
  const std::map<std::string, Named> expected = {
      {"self", Named::this_node},  {"other", Named::another},   {"none", Named::nobody},
      {"standby", Named::unknown}, {"timeout", Named::unknown}, {"network", Named::unknown},
      {"garbage", Named::unknown}};
  for (const auto& [node_name, row] : k_writer_table) {
    for (const auto& [manager, who] : expected) {
      CAPTURE(node_name, manager);
      CHECK(evaluate_writer(writer_obs(manager, node_name), SaturationPolicy::up).named == who);
    }
  }
  for (const auto& [report, _] : leader_reports()) {
    CAPTURE(report);
    CHECK(evaluate_writer(writer_obs("self", "rw", report), SaturationPolicy::up).named ==
          Named::this_node);
  }
  // Agreed by members that are not more than half of those configured (the rest silent): a
  // lone stale member must not start the count, so whom it names is not known.
  for (const char* manager : {"self", "none"}) {
    CAPTURE(manager);
    WriterObservation obs = writer_obs(manager, "rw");
    obs.quorum = false;
    const Verdict v = evaluate_writer(obs, SaturationPolicy::up);
    CHECK(v.named == Named::unknown);
    CHECK(v.state == evaluate_writer(writer_obs(manager, "rw"), SaturationPolicy::up).state);
  }
  WriterObservation other = writer_obs("other", "rw");
  other.quorum = false;
  CHECK(evaluate_writer(other, SaturationPolicy::up).named == Named::another);
}

TEST_CASE("writer: the write probe's outcome, when it was asked", "[core][pg][write_probe]") {
  const ProbeError full{Failure::unwritable,
                        "disk full: could not extend file \"base/1/2\": No space left on device",
                        "53100"};
  const ProbeError missing{
      Failure::protocol, "42P01: ERROR: relation \"dbcheck.write_probe\" does not exist", "42P01"};
  const ProbeError denied{Failure::config, "42501: ERROR: permission denied for table write_probe",
                          "42501"};
  const ProbeError locked{Failure::timeout, "55P03: ERROR: canceling statement due to lock timeout",
                          "55P03"};
  const auto [outcome, state, failure, words] = GENERATE_COPY(
      table<std::optional<tl::expected<void, ProbeError>>, State, Failure, std::string>({
          {std::nullopt, State::up, Failure::none, "PostgreSQL is read-write, not in recovery"},
          {tl::expected<void, ProbeError>{}, State::up, Failure::none,
           "extended a table (write probe, rolled back)"},
          {tl::make_unexpected(full), State::down, Failure::unwritable,
           "PostgreSQL refuses writes: disk full: could not extend file \"base/1/2\": No space "
           "left on device (write probe)"},
          {tl::make_unexpected(missing), State::down, Failure::config,
           "the write probe cannot run as configured: 42P01"},
          {tl::make_unexpected(denied), State::down, Failure::config,
           "`dbcheck setup-sql postgres` (docs/sql/healthcheck-role.sql)"},
          {tl::make_unexpected(locked), State::down, Failure::timeout,
           "PostgreSQL timed out: 55P03"},
      }));
  WriterObservation obs = writer_obs("self", "rw");
  obs.write_probe = outcome;
  const Verdict v = evaluate_writer(obs, SaturationPolicy::up);
  CAPTURE(v.reason);
  CHECK(v.state == state);
  CHECK(v.failure == failure);
  CHECK(v.reason.find(words) != std::string::npos);
}
