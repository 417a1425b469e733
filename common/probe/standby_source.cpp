#include "standby_source.hpp"

#include "async.hpp"
#include "opinion_wait.hpp"

#include <core/shared_view.hpp>
#include <util/format.hpp>

namespace dbcheck::probe {
namespace {

constexpr std::string_view k_source_step = "the source cluster's Patroni query";

// The source's members asked by `deadline` (its own shared views apply: its checks and these
// ask the same members).
ManagerResult ask_members(Peers& peers, const config::PostgresCluster& source,
                          const util::HostPort& node, const Deadline& deadline, bool live) {
  // An "auto" source's views are shared by its own checks; the standby's, which keep no
  // cadence of the source, ask its members and share what they elect.
  const ShareSettings share = patroni_sharing(source);
  return ask_patroni(peers, source.patroni, patroni_http(source), node, deadline, false,
                     live ? share.asked_live() : share);
}

// The members' steps told apart from the standby's own in explain.
void give_steps(std::vector<core::Step>& from, std::vector<core::Step>& to) {
  for (auto& step : from) {
    step.opinion = "source_manager";
    to.push_back(std::move(step));
  }
  from.clear();
}

} // namespace

StandbySource::StandbySource(const config::PostgresCluster& standby, const util::HostPort& node,
                             const Deadline& members_by, std::shared_ptr<Peers> peers)
    : m_name(standby.source_cluster.value_or("")), m_source(standby.source),
      m_unusable(standby.source_unusable), m_node(node), m_peers(std::move(peers)) {
  if (!m_source || !m_unusable.empty()) {
    return;
  }
  const Deadline by = members_by.minus(reserve_for_last_step(members_by, m_peers->now()));
  m_asked = spawn([source = m_source, node, by, peers = m_peers] {
    return ask_members(*peers, *source, node, by, false);
  });
}

bool StandbySource::measures(const core::ClusterView& view) const {
  return m_source && core::find_leader(view) == nullptr &&
         core::find_standby_leader(view) != nullptr;
}

SampleResult StandbySource::sample(const Deadline& deadline, std::vector<core::Step>& steps) {
  SampleResult s;
  const auto named = [this](const std::string& why) {
    return util::format("source cluster {}: {}", m_name, why);
  };
  if (!m_unusable.empty()) {
    s.problem = named(m_unusable);
    return s;
  }
  if (!m_awaited) {
    m_awaited = true;
    m_members = await_by(m_asked, deadline);
    if (m_members) {
      give_steps(m_members->steps, steps);
    }
  }
  if (!m_members) {
    s.problem = named(not_finished(k_source_step).detail);
    s.timed_out = true;
    return s;
  }
  if (!m_members->view) {
    s.problem = named(m_members->view.error().detail);
    s.timed_out = m_members->view.error().kind == core::Failure::timeout;
    return s;
  }
  s = sample_leader(*m_peers, *m_source, *m_members->view, m_node, deadline, "source_sample");
  if (s.step) {
    steps.push_back(*s.step);
  }
  if (!s.wal) {
    s.problem = named(s.problem);
  } else {
    s.leader = util::format("{} of source cluster {}", s.leader, m_name);
  }
  return s;
}

bool StandbySource::shared_unfit(const core::ReplicaStatus& status,
                                 const SampleResult& sample) const {
  return m_members && m_members->shared && m_members->view &&
         !core::shared_view_fits_reader(
             *m_members->view, m_node, status,
             sample.wal ? std::optional{sample.wal->timeline} : std::nullopt, sample.timed_out);
}

void StandbySource::ask_live(const Deadline& deadline, std::vector<core::Step>& steps) {
  steps.push_back(core::Step{"source_manager", "shared view", "GET /cluster",
                             "set aside: it does not fit the source leader's sample or the "
                             "replica's timeline; asking the source's members",
                             0});
  m_members = ask_members(*m_peers, *m_source, m_node, deadline, true);
  give_steps(m_members->steps, steps);
}

void StandbySource::name_in(core::LagEvidence& evidence, const SampleResult& sample) const {
  if (!sample.wal) {
    return; // the problem names the source already
  }
  const std::string whose = "the WAL position of leader " + sample.leader;
  evidence.caught_up_phrase = "replayed past " + whose;
  evidence.behind_phrase = "replay still behind " + whose;
}

} // namespace dbcheck::probe
