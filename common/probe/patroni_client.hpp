#pragma once
// Patroni's opinion, asked over its REST API: the members' GET /cluster until a majority
// agrees (a majority's worth asked first), and the named leader's own GET /primary
// (core/patroni_rounds.hpp plans the rounds, core/patroni_election.hpp decides).

#include "deadline.hpp"
#include "peers.hpp"

#include <config/config.hpp>
#include <core/patroni_cluster.hpp>
#include <core/patroni_outage.hpp>
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
  bool quorum = false;        // the agreeing members are more than half of those configured
  bool shared = false;        // the view is one another check of this host took (shared_views.hpp)
  bool none_answered = false; // no member gave a usable answer (timeouts, refusals, errors)
};

// The members' view, and when they name the node leader, its own Patroni's report.
struct WriterManagerResult {
  ManagerResult members;
  std::optional<tl::expected<core::LeaderReport, core::ProbeError>> leader_report;
  // When no member answered GET /cluster: every member's GET /primary, to learn whether
  // Patroni keeps a leader without its DCS (core/patroni_outage.hpp).
  std::optional<core::OutageAnswers> outage{};
};

// --- Interface ---

// GET /cluster of the members (`bases`) until more than half of them agree, all have
// answered, or `deadline`: first a majority's worth (the node's own Patroni first when one
// base is on its host), the others only when those do not decide (core/patroni_rounds.hpp).
// With `own_denial_decides` (a writer check) the node's own Patroni is asked alone first, and
// its naming another leader ends the asking: the node is not the writer.
// Then, given the `node` checked, the host names the agreed view advertises are resolved and
// replaced by their one address (core/endpoint_names.hpp), to compare with HAProxy's server.
// With `share` on, a view another check of this host elected within share.max_age is taken
// instead of asking (result.shared; the caller sets it aside when it does not fit what is
// asked live: core/shared_view.hpp), and a view a majority elects here is shared.
ManagerResult ask_patroni(Peers& peers, const std::vector<std::string>& bases,
                          const HttpOptions& tls, const std::optional<util::HostPort>& node,
                          const Deadline& deadline, bool own_denial_decides = false,
                          const ShareSettings& share = {});

// ask_patroni(), then, when the agreed view names `node` leader, GET /primary of its own
// Patroni; when no member answered at all, GET /primary of every member at once (the DCS may
// be down while Patroni keeps its leader). The members get what this last step leaves (a
// quarter at least): a hung member must not starve it.
WriterManagerResult ask_patroni_for_writer(Peers& peers, const std::vector<std::string>& bases,
                                           const HttpOptions& tls, const util::HostPort& node,
                                           const Deadline& deadline,
                                           const ShareSettings& share = {});

// GET /primary of every member (`bases`) at once, for when none answered GET /cluster: what
// each Patroni says of itself needs no DCS. Adds one step per member to `steps`, in configured
// order; `node` tells which member is the node's own (core::own_member()).
core::OutageAnswers ask_patroni_outage(Peers& peers, const std::vector<std::string>& bases,
                                       const HttpOptions& tls, const util::HostPort& node,
                                       const Deadline& deadline, std::vector<core::Step>& steps);

// How `cluster`'s checks share Patroni views: in shared_view_dir, for shared_view_max_age.
// When that is "auto" (settings.automatic), no view is reused until with_cadence() says for how
// long; what the members elect is shared all the same.
ShareSettings patroni_sharing(const config::PostgresCluster& cluster);

// `base` (patroni_sharing()), and when it is "auto", with the max age
// core::auto_shared_view_max_age() gives for this check's cadence: marks this check, kept as
// `who` (core::check_mark_key()), as starting now in the views' directory. That may block on
// the directory's file system: call it on a thread the check's deadline bounds, not its own.
ShareSettings with_cadence(Peers& peers, const ShareSettings& base, const std::string& who);

// How the cluster's Patroni REST APIs are reached over https: its CA bundle and client
// certificate (patroni_cafile, patroni_certfile, patroni_keyfile).
HttpOptions patroni_http(const config::PostgresCluster& cluster);

} // namespace dbcheck::probe
