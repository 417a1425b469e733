#pragma once
// The plan of a check's questions to the Patroni members: which members' GET /cluster are asked
// in which round and for how long, when the asking stops, and where the leader's own
// GET /primary is asked. probe/patroni_client.cpp asks; patroni_election.hpp counts the answers.
//
// Why rounds: a healthy cluster should cost each check a majority's worth of requests, not every
// member's; a refusal, a timeout or a disagreement among the first brings in the others. Why the
// node's own Patroni first: for a writer check its naming another leader decides alone (the node
// is not the writer whatever the others say), so a replica's writer check asks one member.

#include "patroni_cluster.hpp"
#include "patroni_election.hpp"

#include <util/host_port.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dbcheck::core {

// How long a round but the last waits before the members not yet asked are asked too (when
// its members have not decided by then): a third of the time left, at most this. Patroni
// answers /cluster from its DCS cache in milliseconds; a member that takes longer is treated as
// not answering.
inline constexpr std::chrono::milliseconds k_first_round_wait{250};

// Once a member has answered with its view, a round but the last waits this many times the
// fastest such answer instead (still at most k_first_round_wait and a third of the time left):
// a member cut off from its DCS hangs on /cluster, and waiting the full 250 ms for it delays
// every check of the new leader after a partition. A wait that proves too short costs requests
// and that wait, never the answer: the cut member is asked again in the last round, which
// waits for every member.
inline constexpr int k_round_wait_factor = 4;

// The least of that wait: room for a member a few network round trips further than the
// fastest (a new connection, and TLS, each take round trips of their own).
inline constexpr std::chrono::milliseconds k_min_round_wait{50};

// One round of GET /cluster: the members asked at once, and how long they may take.
struct PatroniRound {
  std::vector<std::size_t> members; // indexes of the configured members, in asking order
  std::chrono::nanoseconds wait{0}; // the round ends this long after it starts (never later
                                    // than the deadline)
  bool last = false;      // waits for every member: a majority of those that answer decides
  bool own_alone = false; // the node's own Patroni, asked alone: its denial may decide
};

// The rounds of one check, fed the answers as they come in.
class PatroniRounds {
public:
  // --- Interface ---

  // Plans the rounds for `configured` members. `own` (the node's own Patroni, own_member())
  // is asked first; with `own_denial_decides` (a writer check) it is asked alone first. Then
  // a majority's worth (first_round()), then every member not yet heard; each round but the
  // last gets a short wait.
  PatroniRounds(std::size_t configured, std::optional<std::size_t> own, bool own_denial_decides);

  // The order the members are asked and reported in: the own one first, then as configured.
  const std::vector<std::size_t>& order() const { return m_order; }

  // The next round, `left` before the deadline, or nullopt when the asking is over: the own
  // Patroni denied, the election is decided, every round was asked, or (after the first round)
  // no time is left. A member cut at the end of a round is asked again in the next.
  std::optional<PatroniRound> next(std::chrono::nanoseconds left);

  // Records `member`'s answer (or failure), which took `took`, in the current round; true when
  // the round need not wait for the others: the election is decided, or (but in the last
  // round) the members of this round can no longer decide it.
  bool take(std::size_t member, MemberAnswer answer, std::chrono::nanoseconds took);

  // Records why `member`, asked in the round just ended, gave nothing by its end (`why`): it
  // does not count while the rounds go on, and is reported so when no round asks it again.
  void cut(std::size_t member, MemberAnswer why);

  // True once `member` answered or failed in a round (not cut at its end).
  bool finished(std::size_t member) const { return m_finished[member]; }

  // What `member` said, or why not; nullopt when it was never asked (not needed).
  const std::optional<MemberAnswer>& answer(std::size_t member) const { return m_said[member]; }

  // After the round of the own Patroni alone: its view when it names a leader, whose names
  // the caller resolves and gives to own_denies(); else nullptr (nothing to deny).
  const ClusterView* own_view_to_check() const;

  // True when the own Patroni's `resolved` view (a copy of own_view_to_check(), names resolved)
  // names a leader that resolved and is not `node`: the asking ends, the node is not the writer.
  bool own_denies(const ClusterView& resolved, const util::HostPort& node);

  // The answers and failures of every member asked, in asking order: for elect_leader().
  std::vector<MemberAnswer> answers() const;

  // The first member, in asking order, whose view names the leader `elected` names: the one
  // whose answer is shared with the checks that follow.
  std::optional<std::size_t> first_agreeing(const ClusterView& elected) const;

private:
  std::vector<MemberAnswer> answers_in() const; // finished ones only: what may decide so far

  std::size_t m_configured;
  std::optional<std::size_t> m_own;
  bool m_own_denial_decides;
  std::vector<std::size_t> m_order;
  std::vector<std::size_t> m_limits; // each round asks the members up to this place in m_order
  std::size_t m_next_limit = 0;
  std::size_t m_asked = 0; // places in m_order asked so far
  std::size_t m_rounds = 0;
  std::size_t m_pending = 0; // members of the current round not yet heard
  bool m_last = false;       // the current round is the last
  bool m_own_alone = false;  // the current round asked the own Patroni alone
  bool m_denied = false;
  std::optional<std::chrono::nanoseconds> m_fastest; // the quickest answer with a view so far
  std::vector<std::optional<MemberAnswer>> m_said;
  std::vector<bool> m_finished;
};

// Where the leader's own GET /primary is asked, and why there.
struct LeaderBase {
  std::string url; // a base URL, as configured (with its credentials) or the leader's api_url
  std::string why; // for the reason when the leader does not answer there
};

// The configured base URL (of `bases`) on `node`'s host when exactly one is: the node's own
// Patroni, asked first. (On a lab where every member shares one host none is told apart.)
std::optional<std::size_t> own_member(const std::vector<std::string>& bases,
                                      const util::HostPort& node);

// The base URL to ask `leader`'s own Patroni at. In order: the configured URL (of `bases`) that
// reaches the same server as its api_url (so the configured scheme, name and CA apply); else
// the configured URL on the leader's PostgreSQL host, resolved or advertised (api_url often
// holds an address the HAProxy host cannot use: a NAT or container address, an IP where the
// certificate names the host); else that api_url itself; nullopt when it has none usable.
std::optional<LeaderBase> leader_base(const PatroniMember& leader,
                                      const std::vector<std::string>& bases);

} // namespace dbcheck::core
