#pragma once
// A standby cluster's source (source_cluster), as the checks of its readers reach it: the
// source's Patroni members asked while the standby's own are, then the leader they name sampled
// as an ordinary leader is (leader_sample.hpp), so a standby member's lag is bounded like any
// replica's. When the source cannot be read, the sample's problem names it and the bound falls
// back on the last replayed commit (docs/lag.md).

#include "deadline.hpp"
#include "leader_sample.hpp"
#include "patroni_client.hpp"
#include "peers.hpp"

#include <config/config.hpp>
#include <core/patroni_cluster.hpp>
#include <core/pg_rows.hpp>
#include <core/replica_lag.hpp>
#include <core/report.hpp>
#include <util/host_port.hpp>

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dbcheck::probe {

// The source of one standby cluster, for one reader check.
class StandbySource {
public:
  // --- Interface ---

  // Starts asking the members of `standby`'s source for `node`'s check on another thread, by a
  // deadline a quarter earlier than `members_by` (its leader is sampled after them). Asks
  // nothing when `standby` names no source, or one that cannot be reached.
  StandbySource(const config::PostgresCluster& standby, const util::HostPort& node,
                const Deadline& members_by, std::shared_ptr<Peers> peers);

  // True when the readers of `view` are measured against the source: the view is a standby
  // cluster's (a standby_leader, no leader) and the standby names a source.
  bool measures(const core::ClusterView& view) const;

  // The source's leader sampled by `deadline`, as sample_leader() samples a leader; its steps go
  // to `steps` (the members' once). Why there is no sample names the source.
  SampleResult sample(const Deadline& deadline, std::vector<core::Step>& steps);

  // True when the source's view is one another check shared and it does not fit the replica's
  // `status` and `sample` (core/shared_view.hpp): ask_live() before sampling again.
  bool shared_unfit(const core::ReplicaStatus& status, const SampleResult& sample) const;

  // Asks the source's members again, live, by `deadline`; a step says why.
  void ask_live(const Deadline& deadline, std::vector<core::Step>& steps);

  // Names the source's leader in `evidence`'s phrases: the reason says what it was bounded by.
  void name_in(core::LagEvidence& evidence, const SampleResult& sample) const;

private:
  std::string m_name; // the source's [cluster.NAME]
  std::shared_ptr<const config::PostgresCluster> m_source;
  std::string m_unusable;
  util::HostPort m_node;
  std::shared_ptr<Peers> m_peers;
  std::future<ManagerResult> m_asked;
  std::optional<ManagerResult> m_members; // once awaited
  bool m_awaited = false;
};

} // namespace dbcheck::probe
