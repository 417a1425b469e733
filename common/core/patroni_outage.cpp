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

// The node's own member, when `own` names one of the answers.
std::optional<std::size_t> own_index(const OutageAnswers& in) {
  return in.own && *in.own < in.answers.size() ? in.own : std::nullopt;
}

// Why the kept leader `a` decides nothing for the node: no configured URL says which member the
// node is (core::own_member()).
std::string member_untold(const OutageAnswer& a) {
  return util::format("{} keeps a leader, but which member this node is cannot be told: no "
                      "configured URL is on its host alone",
                      said(a));
}

// Who answered and what they run.
struct Tally {
  std::size_t answered = 0;
  std::vector<std::size_t> holders;   // 200 as a running primary
  std::vector<std::size_t> primaries; // a primary in any state
};

// Counts the members that answered, those holding the leader and those running a primary.
Tally tally(const std::vector<OutageAnswer>& answers) {
  Tally t;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    if (answers[i].report) {
      ++t.answered;
      if (holds_leader(*answers[i].report)) {
        t.holders.push_back(i);
      }
      if (runs_primary(*answers[i].report)) {
        t.primaries.push_back(i);
      }
    }
  }
  return t;
}

// Why more than one member cannot be trusted to keep the leader: each one reporting a primary.
std::string several_said(const OutageAnswers& in, const Tally& t) {
  std::string all;
  for (const std::size_t i : t.primaries) {
    all += (all.empty() ? "" : "; ") + said(in.answers[i]);
  }
  return util::format("more than one member reports a primary ({})", all);
}

// The one holder `h` is kept under failsafe mode, or by its own clock with a majority
// answering; else the decision says why not.
OutageDecision kept_by_failsafe_or_majority(const OutageAnswers& in, const Tally& t,
                                            std::size_t h) {
  OutageDecision d;
  const std::size_t n = in.answers.size();
  const LeaderReport& r = *in.answers[h].report;
  if (r.status.failsafe_active) {
    d.leader = h;
    d.failsafe = true;
    d.why = "failsafe mode is active: every member of Patroni's failsafe topology accepted it "
            "within ttl";
    return d;
  }
  if (2 * t.answered <= n) {
    d.why = util::format("{} keeps the leader by its own clock, without failsafe mode, and only "
                         "{} of {} members answer: this host may be cut off with it while the "
                         "others elect another",
                         said(in.answers[h]), t.answered, n);
    d.kind = first_failure(in.answers);
    return d;
  }
  d.leader = h;
  d.why = util::format("it holds the leader lock by its own clock (without failsafe mode Patroni "
                       "demotes it once retry_timeout passes); {} of {} members answer and no "
                       "other runs a primary",
                       t.answered, n);
  return d;
}

} // namespace

OutageDecision outage_leader(const OutageAnswers& in) {
  const auto& answers = in.answers;
  const std::size_t n = answers.size();
  const Tally t = tally(answers);
  OutageDecision d;
  // A standby cluster's members name no primary by design: nothing was demoted there.
  const bool standby = std::any_of(answers.begin(), answers.end(), [](const OutageAnswer& a) {
    return a.report && a.report->status.role == "standby_leader";
  });
  d.no_primary = n > 0 && t.answered == n && t.primaries.empty() && !standby;
  const std::optional<std::size_t> own = own_index(in);
  const bool own_answered = own && answers[*own].report;
  if (t.holders.empty()) {
    d.why = own_answered ? util::format("this node's own Patroni does not keep it leader ({})",
                                        said(answers[*own]))
                         : util::format("no member's Patroni keeps a leader ({} of {} answered)",
                                        t.answered, n);
    d.kind = own_answered || (t.answered == n && n > 0) ? Failure::role : first_failure(answers);
    return d;
  }
  if (t.holders.size() > 1 || t.primaries.size() > 1) {
    d.why = several_said(in, t);
    d.kind = Failure::protocol;
    return d;
  }
  const std::size_t h = t.holders.front();
  if (own && *own != h) {
    d.why = util::format("another member's Patroni keeps the leader ({}), not this node's ({})",
                         said(answers[h]), own_answered ? said(answers[*own]) : "no answer");
    d.kind = Failure::role;
    return d;
  }
  if (!own) {
    // Without it, nothing here ties the leader's Patroni to the node: a read-write node that is
    // no member's (a promoted DR node, an old member left running) would pass beside it.
    d.why = member_untold(answers[h]);
    d.kind = Failure::protocol;
    return d;
  }
  OutageDecision kept = kept_by_failsafe_or_majority(in, t, h);
  kept.no_primary = d.no_primary;
  return kept;
}

OutageReplicaDecision outage_leader_for_replica(const OutageAnswers& in) {
  const auto& answers = in.answers;
  const std::size_t n = answers.size();
  const Tally t = tally(answers);
  const std::optional<std::size_t> own = own_index(in);
  OutageReplicaDecision d;
  if (t.holders.empty()) {
    // Nothing to measure the replica's lag against (Patroni demoted its leader, or this host
    // reaches none): its data may be behind one this host cannot see.
    d.why = util::format("no member's Patroni keeps a leader to measure the replica against "
                         "({} of {} answered)",
                         t.answered, n);
    d.kind = t.answered == n && n > 0 ? Failure::lag : first_failure(answers);
    return d;
  }
  if (t.holders.size() > 1 || t.primaries.size() > 1) {
    d.why = several_said(in, t);
    d.kind = Failure::protocol;
    return d;
  }
  const std::size_t h = t.holders.front();
  if (!own) {
    // Without it nothing here ties the node to a member: a replica of a standby cluster, or any
    // clone of the cluster, shares its system identifier, and its tags cannot be seen.
    d.why = member_untold(answers[h]);
    d.kind = Failure::protocol;
    return d;
  }
  if (*own == h) {
    d.why = util::format("this node's own Patroni keeps it leader ({})", said(answers[h]));
    d.kind = Failure::role;
    return d;
  }
  const OutageDecision kept = kept_by_failsafe_or_majority(in, t, h);
  if (!kept.leader) {
    d.why = kept.why;
    d.kind = kept.kind;
    return d;
  }
  // Patroni's GET /replica: a running replica not tagged noloadbalance.
  const OutageAnswer& mine = answers[*own];
  if (!mine.report) {
    d.why = util::format("this node's own Patroni does not answer ({})", said(mine));
    d.kind = mine.report.error().kind;
    return d;
  }
  const PatroniStatus& st = mine.report->status;
  if (st.role != "replica" || st.state != "running") {
    d.why = util::format("this node's own Patroni does not run it as a replica ({})", said(mine));
    d.kind = st.state != "running" ? Failure::not_ready : Failure::role;
    return d;
  }
  if (st.noloadbalance) {
    d.why = util::format("this node's own Patroni tags it noloadbalance ({})", mine.url);
    d.kind = Failure::policy;
    return d;
  }
  d.leader = h;
  d.why = util::format("{} keeps the leader without its DCS: {}", answers[h].url, kept.why);
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
