#pragma once
// Everything one check found out, for `dbcheck explain`, logs and the agent's HTTP endpoints.

#include "probe_error.hpp"
#include "replica_lag.hpp"
#include "verdict.hpp"

#include <util/format.hpp>

#include <tl/expected.hpp>

#include <optional>
#include <string>
#include <vector>

namespace dbcheck::core {

// One question asked of one peer.
struct Step {
  std::string opinion; // "manager", "node", "primary_sample"
  std::string peer;    // whom it asked (URLs without credentials)
  std::string asked;   // what it asked ("GET /cluster", the SQL)
  std::string answer;  // what came back, summarised, or the error
  double latency_ms = 0;
};

// How the manager's peers voted in a writer check (Redis: the configured Sentinels): for this
// node, for another, and neither (no answer, nil, o_down, mid-failover).
struct ManagerVotes {
  std::size_t configured = 0;
  std::size_t this_node = 0;
  std::size_t another = 0;
};

// One check, complete: the verdict and every step that led to it.
struct Report {
  std::string backend;
  std::string node;
  std::string role; // "primary" or "replica"
  Verdict verdict;
  std::optional<LagEstimate> lag;            // replicas only
  std::optional<ManagerVotes> manager_votes; // Redis writers only
  std::string own; // the node's own answer in a few words ("primary, read-write"), or its error
  // How the check logs in to the node, never a secret ("user healthcheck: client certificate
  // /etc/dbcheck/hc.crt"); empty where the engine has nothing to tell.
  std::string auth;
  std::vector<Step> steps;
  // The node gave its own opinion: its "node" step's latency_ms is its answer time (the
  // latency bound judges it; a node that did not answer is judged by its failure instead).
  bool node_answered = false;
  double elapsed_ms = 0;
  double deadline_ms = 0;
};

// --- Interface ---

// "no answer (<failure class>)": what a peer that did not answer said, in a few words (the
// detail is in its step and the reason already).
inline std::string no_answer(Failure why) {
  return util::format("no answer ({})", to_string(why));
}

// A node's answer in a few words for Report::own (the summarize() of its type), or no_answer().
template <class Answer>
std::string own_words(const tl::expected<Answer, ProbeError>& answer) {
  return answer ? summarize(*answer) : no_answer(answer.error().kind);
}

// One line: "pg_write 10.0.0.1:5432 UP: <reason>"; what syslog and `dbcheck check` print.
std::string render_line(const Report& r);

// Several lines for people: each opinion, the lag derivation, the verdict.
std::string render_text(const Report& r);

// The same as a JSON document (field names: docs/explain.md).
std::string render_json(const Report& r);

} // namespace dbcheck::core
