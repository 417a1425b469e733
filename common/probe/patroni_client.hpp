#pragma once
// Patroni's opinion, asked over its REST API: every member's GET /cluster until a majority
// agrees, and the named leader's own GET /primary (core/patroni_election.hpp decides).

#include "deadline.hpp"
#include "peers.hpp"

#include <config/config.hpp>

#include <core/patroni_cluster.hpp>
#include <core/pg_verdict.hpp>
#include <core/probe_error.hpp>
#include <core/report.hpp>
#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <optional>
#include <string>
#include <vector>

namespace dbcheck::probe {

// What the members said.
struct ManagerResult {
  tl::expected<core::ClusterView, core::ProbeError> view; // the view the members agree on
  std::vector<core::Step> steps;                          // one per member asked
  bool quorum = false; // the agreeing members are more than half of those configured
};

// The members' view, and when they name the node leader, its own Patroni's report.
struct WriterManagerResult {
  ManagerResult members;
  std::optional<tl::expected<core::LeaderReport, core::ProbeError>> leader_report;
};

// --- Interface ---

// GET /cluster of every member (`bases`) at once, until more than half of them agree, all
// have answered, or `deadline`; then, given the `node` checked, the host names the agreed view
// advertises resolved and replaced by their one address (core/endpoint_names.hpp), so they
// compare with HAProxy's server address.
ManagerResult ask_patroni(Peers& peers, const std::vector<std::string>& bases,
                          const HttpOptions& tls, const std::optional<util::HostPort>& node,
                          const Deadline& deadline);

// ask_patroni(), then, when the agreed view names `node` leader, GET /primary of its own
// Patroni. The members get what the confirmation leaves (a quarter at least): a hung member
// must not starve it.
WriterManagerResult ask_patroni_for_writer(Peers& peers, const std::vector<std::string>& bases,
                                           const HttpOptions& tls, const util::HostPort& node,
                                           const Deadline& deadline);

// How the cluster's Patroni REST APIs are reached over https: its CA bundle and client
// certificate (patroni_cafile, patroni_certfile, patroni_keyfile).
HttpOptions patroni_http(const config::PostgresCluster& cluster);

} // namespace dbcheck::probe
