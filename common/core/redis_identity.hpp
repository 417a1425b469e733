#pragma once
// Whether the Redis answering at the master's address is the instance the Sentinels mean: its
// run_id (INFO server, new at every start) against the runid the Sentinels naming it last read
// from it. A master that restarted (empty, with persistence off) or another server at that
// address answers ROLE master just the same. Pure.

#include "sentinel_vote.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dbcheck::core {

// The node's run_id as the writer check read it.
struct NodeRunId {
  enum class Outcome {
    not_asked, // not a writer check
    known,     // INFO server answered with a run_id
    unknown,   // refused (NOPERM) or unparsable: not checked, never a failure
  };
  Outcome outcome = Outcome::not_asked;
  std::string value; // known: the run_id; unknown: why not
};

// --- Interface ---

// The run_id line of an INFO server reply ("run_id:<40 hex>"); empty when absent.
std::string run_id_from_info(const std::string& info);

// The identity failure's reason when at least `needed` of the Sentinels that name `node` report
// the same runid and the node's differs: the node restarted since they last read its INFO, or
// another server answers there; nullopt when they agree, or either side is unknown.
std::optional<std::string> run_id_mismatch(const std::vector<SentinelAnswer>& answers,
                                           const util::HostPort& node, std::size_t needed,
                                           const NodeRunId& run_id);

} // namespace dbcheck::core
