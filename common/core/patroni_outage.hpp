#pragma once
// Which member's Patroni keeps the leader while no member gives its view of the cluster (every
// GET /cluster failed: the DCS cannot be read, or this host reaches no member), decided from
// what Patroni itself decides then, as every member's GET /primary reports it.
//
// Why: without its DCS, Patroni keeps a running primary as leader, and answers GET /primary 200,
// in two cases only: within ttl of its last lock renewal by its own clock (it demotes itself
// once retry_timeout passes), and under failsafe_mode while every member of the DCS's failsafe
// topology accepts its POST /failsafe (a member that runs a primary itself refuses, so two
// leaders cannot both be accepted). Patroni's own check follows that answer; failing the writer
// there would turn a DCS outage into a write outage, for the users who turned failsafe on to
// avoid exactly that.
// Why more than one answer: a leader cut off, with this host, from the DCS and the other members
// still holds the lock by its own clock while the others elect a new leader. So, failsafe aside,
// a majority of the members must answer and none but the leader may run a primary: the others
// then see no DCS either, or they would be the ones answering GET /cluster.

#include "patroni_status.hpp"
#include "probe_error.hpp"

#include <tl/expected.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dbcheck::core {

// One configured member's answer to GET /primary (200 or 503 with its status), or why none.
struct OutageAnswer {
  std::string url; // without credentials
  tl::expected<LeaderReport, ProbeError> report;
};

// Every configured member's answer, in configured order, and which one is the checked node's own.
struct OutageAnswers {
  std::vector<OutageAnswer> answers;
  // The member whose URL is on the node's host (own_member()); nullopt when none or several are.
  std::optional<std::size_t> own;
};

// What the answers decide.
struct OutageDecision {
  std::optional<std::size_t> leader; // the member whose Patroni keeps the leader
  bool failsafe = false;             // it keeps it under failsafe mode
  std::string why;                   // why it is kept, or why no member is
  Failure kind = Failure::none;      // when none: role when the node's own Patroni (or every
                                     // member) answered and it is not the leader; else what
                                     // stopped the asking
  // Every configured member answered, none runs a primary (in any state), and none leads a
  // standby cluster. The configured members are taken to be the cluster's.
  bool no_primary = false;
};

// What the answers decide for a replica's check.
struct OutageReplicaDecision {
  std::optional<std::size_t> leader; // the member whose Patroni keeps the leader: its GET
                                     // /primary position is the replica's leader sample
  std::string why;                   // why the leader is kept and the node may read, or not
  Failure kind = Failure::none;
};

// --- Interface ---

// The member whose Patroni keeps the leader: exactly one answers 200 as a running primary and
// no other reports a primary; it is the node's own (`own` known, and that member); and either
// it reports failsafe mode active or more than half of the members answered.
OutageDecision outage_leader(const OutageAnswers& answers);

// For a replica's check, what Patroni's own GET /replica keeps without the DCS, measured
// against a leader: the kept leader as outage_leader() finds it, but not the node's own member
// (`own` must be known); and the node's own Patroni runs a replica, in state running, and does
// not tag it noloadbalance.
OutageReplicaDecision outage_leader_for_replica(const OutageAnswers& answers);

// The latest DCS read (dcs_last_seen, epoch seconds by each member's clock) any member reported;
// nullopt when none did.
std::optional<long long> latest_dcs_read(const OutageAnswers& answers);

// True when some member answered GET /primary (200 or 503): reachable from this host.
bool any_member_answered(const OutageAnswers& answers);

} // namespace dbcheck::core
