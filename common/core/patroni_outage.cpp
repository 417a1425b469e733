#include "patroni_outage.hpp"

#include <util/format.hpp>

#include <algorithm>

namespace dbcheck::core {
namespace {

bool runs_primary(const LeaderReport& r) {
  return r.status.role == "master" || r.status.role == "primary"; // Patroni 3.x / 4.x
}

bool holds_leader(const LeaderReport& r) {
  return r.http_status == 200 && runs_primary(r) && r.status.state == "running";
}

std::string said(const OutageAnswer& a) {
  if (!a.report) {
    return util::format("{}: {}", a.url, a.report.error().detail);
  }
  return util::format("{}: GET /primary {}, role {}, state {}{}", a.url, a.report->http_status,
                      a.report->status.role, a.report->status.state,
                      a.report->status.failsafe_active ? ", failsafe mode active" : "");
}

// The kind of the first failure (timeout, network, protocol): what stopped the asking.
Failure first_failure(const std::vector<OutageAnswer>& answers) {
  for (const auto& a : answers) {
    if (!a.report) {
      return a.report.error().kind;
    }
  }
  return Failure::protocol;
}

} // namespace

OutageDecision outage_leader(const OutageAnswers& in) {
  const auto& answers = in.answers;
  const std::size_t n = answers.size();
  std::size_t answered = 0;
  std::vector<std::size_t> holders;
  std::vector<std::size_t> primaries;
  for (std::size_t i = 0; i < n; ++i) {
    if (answers[i].report) {
      ++answered;
      if (holds_leader(*answers[i].report)) {
        holders.push_back(i);
      }
      if (runs_primary(*answers[i].report)) {
        primaries.push_back(i);
      }
    }
  }
  OutageDecision d;
  // A standby cluster's members name no primary by design: nothing was demoted there.
  const bool standby = std::any_of(answers.begin(), answers.end(), [](const OutageAnswer& a) {
    return a.report && a.report->status.role == "standby_leader";
  });
  d.no_primary = n > 0 && answered == n && primaries.empty() && !standby;
  const bool own_answered = in.own && answers[*in.own].report;
  if (holders.empty()) {
    d.why = own_answered ? util::format("this node's own Patroni does not keep it leader ({})",
                                        said(answers[*in.own]))
                         : util::format("no member's Patroni keeps a leader ({} of {} answered)",
                                        answered, n);
    d.kind = own_answered || (answered == n && n > 0) ? Failure::role : first_failure(answers);
    return d;
  }
  if (holders.size() > 1 || primaries.size() > 1) {
    std::string all;
    for (const std::size_t i : primaries) {
      all += (all.empty() ? "" : "; ") + said(answers[i]);
    }
    d.why = util::format("more than one member reports a primary ({})", all);
    d.kind = Failure::protocol;
    return d;
  }
  const std::size_t h = holders.front();
  if (in.own && *in.own != h) {
    d.why = util::format("another member's Patroni keeps the leader ({}), not this node's ({})",
                         said(answers[h]), own_answered ? said(answers[*in.own]) : "no answer");
    d.kind = Failure::role;
    return d;
  }
  if (!in.own) {
    // Without it, nothing here ties the leader's Patroni to the node: a read-write node that is
    // no member's (a promoted DR node, an old member left running) would pass beside it.
    d.why = util::format("{} keeps a leader, but which member this node is cannot be told: no "
                         "configured URL is on its host alone",
                         said(answers[h]));
    d.kind = Failure::protocol;
    return d;
  }
  const LeaderReport& r = *answers[h].report;
  if (r.status.failsafe_active) {
    d.leader = h;
    d.failsafe = true;
    d.why = "failsafe mode is active: every member of Patroni's failsafe topology accepted it "
            "within ttl";
    return d;
  }
  if (2 * answered <= n) {
    d.why = util::format("{} keeps the leader by its own clock, without failsafe mode, and only "
                         "{} of {} members answer: this host may be cut off with it while the "
                         "others elect another",
                         said(answers[h]), answered, n);
    d.kind = first_failure(answers);
    return d;
  }
  d.leader = h;
  d.why = util::format("it holds the leader lock by its own clock (without failsafe mode Patroni "
                       "demotes it once retry_timeout passes); {} of {} members answer and no "
                       "other runs a primary",
                       answered, n);
  return d;
}

std::optional<long long> latest_dcs_read(const OutageAnswers& in) {
  std::optional<long long> latest;
  for (const auto& a : in.answers) {
    if (a.report && a.report->status.dcs_last_seen &&
        (!latest || *a.report->status.dcs_last_seen > *latest)) {
      latest = a.report->status.dcs_last_seen;
    }
  }
  return latest;
}

bool any_member_answered(const OutageAnswers& in) {
  return std::any_of(in.answers.begin(), in.answers.end(),
                     [](const OutageAnswer& a) { return a.report.has_value(); });
}

} // namespace dbcheck::core
