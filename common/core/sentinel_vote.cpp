#include "sentinel_vote.hpp"

#include <util/format.hpp>

#include <algorithm>

namespace dbcheck::core {
namespace {

bool counts_for(const SentinelAnswer& a, const util::HostPort& node) {
  return a.view && a.view->master && !a.view->unsettled() &&
         util::same_endpoint(*a.view->master, node);
}

// The answers with each Sentinel once (its first answer), in the order given.
std::vector<const SentinelAnswer*> distinct(const std::vector<SentinelAnswer>& answers) {
  std::vector<const SentinelAnswer*> out;
  for (const auto& a : answers) {
    bool seen = false;
    for (const SentinelAnswer* o : out) {
      seen = seen || util::same_endpoint(o->sentinel, a.sentinel);
    }
    if (!seen) {
      out.push_back(&a);
    }
  }
  return out;
}

bool is_master_role(const std::string& role) {
  return role == "master" || role == "primary"; // Valkey 8 may say primary
}

std::string describe(const SentinelAnswer& a) {
  const std::string who = util::to_string(a.sentinel);
  if (!a.view) {
    return util::format("{}: {}", who, a.view.error().detail);
  }
  const SentinelView& v = *a.view;
  const std::string epoch =
      v.config_epoch ? util::format("epoch {}", *v.config_epoch) : std::string{"epoch ?"};
  if (!v.master) {
    return util::format("{} does not know the master name", who);
  }
  return util::format("{} names {} ({}{}){}", who, util::to_string(*v.master), epoch,
                      v.flags.empty() ? "" : ", flags " + v.flags,
                      v.unsettled() ? ": not counted" : "");
}

} // namespace

std::size_t votes_for(const std::vector<SentinelAnswer>& answers, const util::HostPort& node) {
  std::size_t n = 0;
  for (const SentinelAnswer* a : distinct(answers)) {
    n += counts_for(*a, node) ? 1 : 0;
  }
  return n;
}

std::size_t dissenters(const std::vector<SentinelAnswer>& answers, const util::HostPort& node) {
  std::size_t n = 0;
  for (const SentinelAnswer* a : distinct(answers)) {
    n += a->view && !counts_for(*a, node) ? 1 : 0;
  }
  return n;
}

std::vector<util::HostPort> newer_elsewhere(const std::vector<SentinelAnswer>& answers,
                                            const util::HostPort& node) {
  const std::vector<const SentinelAnswer*> each = distinct(answers);
  std::optional<long long> newest_for_node;
  for (const SentinelAnswer* a : each) {
    if (a->view && a->view->master && util::same_endpoint(*a->view->master, node)) {
      if (!a->view->config_epoch) {
        continue; // one answer without an epoch must not switch the rule off for the others
      }
      newest_for_node =
          std::max(newest_for_node.value_or(*a->view->config_epoch), *a->view->config_epoch);
    }
  }
  std::vector<util::HostPort> out;
  if (!newest_for_node) {
    return out;
  }
  for (const SentinelAnswer* a : each) {
    if (a->view && a->view->master && !util::same_endpoint(*a->view->master, node) &&
        a->view->config_epoch && *a->view->config_epoch > *newest_for_node) {
      out.push_back(a->sentinel);
    }
  }
  return out;
}

std::size_t vouchers_for(const std::vector<SentinelAnswer>& answers, const util::HostPort& node,
                         long long max_info_age_ms) {
  std::size_t n = 0;
  for (const SentinelAnswer* a : distinct(answers)) {
    // Sentinel reports info-refresh 0 and role-reported "master" for an instance it never
    // read INFO from: only a positive age on a linked, reachable master is a report.
    const SentinelView* v = a->view ? &*a->view : nullptr;
    n += counts_for(*a, node) && is_master_role(v->role_reported) && v->info_refresh_ms &&
                 *v->info_refresh_ms > 0 && *v->info_refresh_ms <= max_info_age_ms &&
                 !v->has("disconnected") && !v->has("s_down")
             ? 1
             : 0;
  }
  return n;
}

SentinelTally tally_sentinels(const std::vector<SentinelAnswer>& answers, std::size_t configured) {
  const std::vector<const SentinelAnswer*> each = distinct(answers);
  SentinelTally t;
  t.configured = std::max(configured, each.size());
  t.needed = t.configured / 2 + 1;
  for (const SentinelAnswer* a : each) {
    if (a->view && a->view->master && !a->view->unsettled()) {
      const std::size_t n = votes_for(answers, *a->view->master);
      if (n >= t.needed && n > t.majority_votes) {
        t.majority = *a->view->master;
        t.majority_votes = n;
      }
    }
    if (a->view && a->view->master && a->view->failing_over()) {
      t.failing_over.push_back(a->sentinel);
    }
    t.detail += util::format("{}{}", t.detail.empty() ? "" : "; ", describe(*a));
  }
  if (!each.empty()) {
    bool same = true;
    for (const SentinelAnswer* a : each) {
      same = same && !a->view && a->view.error().kind == each.front()->view.error().kind;
    }
    if (same) {
      t.common_failure = each.front()->view.error().kind;
    }
  }
  return t;
}

} // namespace dbcheck::core
