#include "patroni_election.hpp"

#include <util/format.hpp>

namespace dbcheck::core {
namespace {

// Two views agree when they name the same leader by name and address, or both name none.
bool same_leader(const ClusterView& a, const ClusterView& b) {
  const PatroniMember* la = find_leader(a);
  const PatroniMember* lb = find_leader(b);
  if (la == nullptr || lb == nullptr) {
    return la == lb;
  }
  return la->name == lb->name && util::same_endpoint(la->address, lb->address);
}

std::size_t agreeing_with(const std::vector<MemberAnswer>& answers, const ClusterView& view) {
  std::size_t n = 0;
  for (const auto& a : answers) {
    n += a.view && same_leader(*a.view, view) ? 1 : 0;
  }
  return n;
}

// The index of the first usable answer that the most answers agree with, and their count.
std::pair<std::size_t, std::size_t> largest_group(const std::vector<MemberAnswer>& answers) {
  std::size_t best = answers.size();
  std::size_t votes = 0;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    if (answers[i].view) {
      const std::size_t n = agreeing_with(answers, *answers[i].view);
      if (n > votes) {
        best = i;
        votes = n;
      }
    }
  }
  return {best, votes};
}

} // namespace

std::string leader_label(const ClusterView& view) {
  const PatroniMember* l = find_leader(view);
  return l == nullptr ? std::string{"no leader"}
                      : util::format("{} ({})", l->name.empty() ? "?" : l->name,
                                     util::to_string(l->address));
}

bool election_decided(const std::vector<MemberAnswer>& answers, std::size_t configured) {
  return largest_group(answers).second > configured / 2;
}

bool election_possible(const std::vector<MemberAnswer>& answers, std::size_t pending,
                       std::size_t configured) {
  return largest_group(answers).second + pending > configured / 2;
}

std::size_t first_round(std::size_t configured) {
  return configured / 2 + 1;
}

PatroniElection elect_leader(const std::vector<MemberAnswer>& answers, std::size_t configured) {
  std::size_t answered = 0;
  std::string detail;
  bool all_timed_out = !answers.empty();
  bool any_protocol = false;
  std::string failures;
  for (const auto& a : answers) {
    if (a.view) {
      ++answered;
      detail +=
          util::format("{}{} names {}", detail.empty() ? "" : "; ", a.url, leader_label(*a.view));
    } else {
      all_timed_out = all_timed_out && a.view.error().kind == Failure::timeout;
      any_protocol = any_protocol || a.view.error().kind == Failure::protocol;
      failures +=
          util::format("{}{}: {}", failures.empty() ? "" : "; ", a.url, a.view.error().detail);
    }
  }
  if (!failures.empty()) {
    detail += (detail.empty() ? "" : "; ") + failures;
  }
  // Every path ends here, with the view or why there is none.
  const auto elected = [&](tl::expected<ClusterView, ProbeError> view, std::size_t agreeing) {
    return PatroniElection{configured, answered, agreeing, std::move(view), detail};
  };
  if (answered == 0) {
    const Failure kind = all_timed_out  ? Failure::timeout
                         : any_protocol ? Failure::protocol
                                        : Failure::network;
    const std::string lead = all_timed_out
                                 ? "timeout: no Patroni member answered before the deadline"
                                 : "no Patroni member gave a usable answer";
    return elected(
        tl::make_unexpected(ProbeError{kind, util::format("{} ({})", lead, failures), ""}), 0);
  }
  const auto [index, votes] = largest_group(answers);
  if (votes * 2 <= answered) {
    // Uncertainty, not a "not this node": a stale member against a fresh one splits evenly.
    return elected(tl::make_unexpected(ProbeError{
                       Failure::protocol,
                       util::format("Patroni members disagree: no leader is named by more than "
                                    "half of the {} that answered ({})",
                                    answered, detail),
                       ""}),
                   votes);
  }
  return elected(*answers[index].view, votes);
}

} // namespace dbcheck::core
