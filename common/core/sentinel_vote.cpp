#include "sentinel_vote.hpp"

#include <fmt/format.h>

#include <map>

namespace dbcheck::core {
namespace {

bool counts_for(const SentinelAnswer& a, const util::HostPort& node) {
  return a.view && a.view->master && !a.view->unsettled() &&
         util::same_endpoint(*a.view->master, node);
}

std::string describe(const SentinelAnswer& a) {
  const std::string who = util::to_string(a.sentinel);
  if (!a.view) {
    return fmt::format("{}: {}", who, a.view.error().detail);
  }
  const SentinelView& v = *a.view;
  const std::string epoch =
      v.config_epoch ? fmt::format("epoch {}", *v.config_epoch) : std::string{"epoch ?"};
  if (!v.master) {
    return fmt::format("{} does not know the master name", who);
  }
  return fmt::format("{} names {} ({}{}){}", who, util::to_string(*v.master), epoch,
                     v.flags.empty() ? "" : ", flags " + v.flags,
                     v.unsettled() ? ": not counted" : "");
}

} // namespace

std::size_t votes_for(const std::vector<SentinelAnswer>& answers, const util::HostPort& node) {
  std::size_t n = 0;
  for (const auto& a : answers) {
    n += counts_for(a, node) ? 1 : 0;
  }
  return n;
}

SentinelTally tally_sentinels(const std::vector<SentinelAnswer>& answers, std::size_t configured) {
  SentinelTally t;
  t.configured = configured;
  t.needed = configured / 2 + 1;
  for (const auto& a : answers) {
    if (a.view && a.view->master && !a.view->unsettled()) {
      const std::size_t n = votes_for(answers, *a.view->master);
      if (n >= t.needed && n > t.majority_votes) {
        t.majority = *a.view->master;
        t.majority_votes = n;
      }
    }
    t.detail += fmt::format("{}{}", t.detail.empty() ? "" : "; ", describe(a));
  }
  if (!answers.empty()) {
    bool same = true;
    for (const auto& a : answers) {
      same = same && !a.view && a.view.error().kind == answers.front().view.error().kind;
    }
    if (same) {
      t.common_failure = answers.front().view.error().kind;
    }
  }
  return t;
}

} // namespace dbcheck::core
