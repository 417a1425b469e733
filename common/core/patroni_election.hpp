#pragma once
// Which leader the Patroni members agree on: a strict majority of the members that answered
// GET /cluster must name the same leader (name and address), or the same absence of one.
//
// Why a majority and not the first answer: one member cut from the DCS can answer from a
// stale cache (Patroni 4 on etcd3 serves /cluster from a watch cache) and would name a
// writer on its own. Why of those that answered: a member that is down or unreachable says
// nothing either way; the leader must still confirm itself (core/pg_verdict.hpp), so a lone
// stale answer cannot pass a node whose own Patroni disagrees.

#include "patroni_cluster.hpp"
#include "probe_error.hpp"

#include <tl/expected.hpp>

#include <string>
#include <vector>

namespace dbcheck::core {

// One configured Patroni REST API and its answer to GET /cluster (or why there is none).
struct MemberAnswer {
  std::string url; // without credentials
  tl::expected<ClusterView, ProbeError> view;
};

// The outcome of counting the answers.
struct PatroniElection {
  std::size_t configured = 0; // Patroni REST APIs in the configuration
  std::size_t answered = 0;   // of which gave a usable /cluster answer
  std::size_t agreeing = 0;   // of which name the majority's leader (or its absence)
  // The view of the first member of the majority; or why there is none: every member failed
  // (its kind: timeout, network, protocol) or the answers split evenly (protocol).
  tl::expected<ClusterView, ProbeError> view;
  std::string detail; // who said what, for reasons and explain
};

// --- Interface ---

// Counts the answers: the view named by more than half of the usable answers wins.
PatroniElection elect_leader(const std::vector<MemberAnswer>& answers, std::size_t configured);

// True when more than half of the `configured` members already agree, so the answers still
// out cannot change the outcome (the check stops waiting for them).
bool election_decided(const std::vector<MemberAnswer>& answers, std::size_t configured);

// True while the members asked so far can still decide: the largest group of agreeing answers
// plus the `pending` answers not yet in could exceed half of `configured`. False means the
// members not yet asked must be asked (a refusal, a timeout or a disagreement among the first).
bool election_possible(const std::vector<MemberAnswer>& answers, std::size_t pending,
                       std::size_t configured);

// How many members to ask first: just enough to make a majority of `configured` if they agree.
// The others are asked only when these do not decide (patroni_rounds.hpp), so a healthy
// cluster answers each check with a majority's requests, not every member's.
std::size_t first_round(std::size_t configured);

// "pg1 (10.0.0.1:5432)" for the leader a view names, or "no leader".
std::string leader_label(const ClusterView& view);

} // namespace dbcheck::core
