#include "pg_verdict.hpp"

#include <util/duration.hpp>
#include <util/format.hpp>

namespace dbcheck::core {
namespace {

std::string member_label(const PatroniMember& m) {
  const std::string name = m.name.empty() ? "?" : m.name;
  if (!m.advertised.empty()) {
    return util::format("{} ({} = {})", name, m.advertised, util::to_string(m.address));
  }
  return util::format("{} ({})", name, util::to_string(m.address));
}

bool is_primary_role(std::string_view role) {
  return role == "master" || role == "primary"; // Patroni 3.x / 4.x
}

// The members name this node leader: its own Patroni must say so too. GET /primary answers
// 200 only while that Patroni renewed the leader lock within ttl by its own clock (and is not
// a standby cluster): Patroni's own check, so dbcheck never passes a writer it would fail.
Opinion leader_confirms(const WriterObservation& obs, const PatroniMember& leader) {
  const std::string named = util::format("Patroni names this node ({}) leader", leader.name);
  if (!obs.leader_report) {
    return {false, util::format("this node's Patroni was not asked to confirm it: {}", named),
            Failure::protocol};
  }
  const auto& report = *obs.leader_report;
  if (!report) {
    return {false,
            util::format("{} ({}, unconfirmed: unmanaged leader?)",
                         describe_failure("this node's Patroni", report.error()), named),
            report.error().kind};
  }
  const PatroniStatus& st = report->status;
  if (st.name && *st.name != leader.name) {
    return {false,
            util::format("{}, but {} answers as member {}, not {}", named, report->url, *st.name,
                         leader.name),
            Failure::role};
  }
  if (report->http_status == 503) {
    return {false,
            util::format("{}, but its own Patroni answers GET /primary 503 (it does not hold the "
                         "leader lock; role {}, state {})",
                         named, st.role, st.state),
            Failure::role};
  }
  if (report->http_status != 200) {
    return {false,
            util::format("unusable answer from this node's Patroni: GET /primary {} ({})",
                         report->http_status, named),
            Failure::protocol};
  }
  if (!is_primary_role(st.role)) {
    return {false, util::format("{}, but its own Patroni says role {}", named, st.role),
            Failure::role};
  }
  if (st.state != "running") {
    return {
        false,
        util::format("PostgreSQL not ready: its own Patroni says it is {} ({})", st.state, named),
        Failure::not_ready};
  }
  Opinion o{true,
            util::format("{}, confirmed by its own Patroni (GET /primary 200: holds the leader "
                         "lock, running {})",
                         named, st.role),
            Failure::none};
  o.vouches_for_node = true; // Patroni's own query of PostgreSQL says primary
  return o;
}

// No member gave its view: whether Patroni keeps this node leader without its DCS
// (core/patroni_outage.hpp), said after why the members gave none.
Opinion outage_opinion(const ProbeError& members, const OutageAnswers& outage) {
  const OutageDecision d = outage_leader(outage);
  const std::string lead = describe_failure("Patroni", members);
  if (!d.leader) {
    Opinion o{false, util::format("{}; asked GET /primary of every member: {}", lead, d.why),
              d.kind};
    // Each member's Patroni says its PostgreSQL is no primary: the agent's rise rule may count
    // this round (core/health_tracker.hpp).
    o.named = d.no_primary ? Named::no_primary : Named::unknown;
    return o;
  }
  const LeaderReport& r = *outage.answers[*d.leader].report;
  Opinion o{true,
            util::format("Patroni keeps this node leader without its DCS: {} answers GET /primary "
                         "200, running {}{}, because {} (no member gives its view of the cluster: "
                         "{})",
                         r.url, r.status.role, r.status.name ? ", member " + *r.status.name : "",
                         d.why, members.detail),
            Failure::none};
  o.vouches_for_node = true; // the node's own Patroni says it runs a primary
  return o;
}

Opinion manager_writer_opinion(const WriterObservation& obs) {
  if (!obs.manager) {
    if (obs.outage) {
      return outage_opinion(obs.manager.error(), *obs.outage);
    }
    return {false, describe_failure("Patroni", obs.manager.error()), obs.manager.error().kind};
  }
  const ClusterView& view = *obs.manager;
  if (const PatroniMember* leader = find_leader(view)) {
    if (util::same_endpoint(leader->address, obs.node)) {
      if (!leader->advertised.empty()) {
        // A stale /etc/hosts or a spoofed answer can point the leader's name at another
        // member's host: then the old primary there would pass on Patroni's word.
        for (const auto& m : view.members) {
          if (&m != leader && util::same_endpoint(m.address, leader->address)) {
            return {false,
                    util::format("Patroni names {} leader, but its name resolves to the address "
                                 "of member {} too: which host is the writer cannot be told",
                                 member_label(*leader), member_label(m)),
                    Failure::config};
          }
        }
      }
      Opinion o = leader_confirms(obs, *leader);
      // A lone stale member must not start the agent's count (core/health_tracker.hpp).
      o.named = obs.quorum ? Named::this_node : Named::unknown;
      return o;
    }
    if (!leader->unresolved.empty()) {
      // A name that did not resolve might be this node: neither writer nor "another".
      return {false,
              util::format("Patroni names {} leader, and whether that is this node is not known: "
                           "{}",
                           member_label(*leader), leader->unresolved),
              Failure::network};
    }
    Opinion o{false, util::format("Patroni names {} leader, not this node", member_label(*leader)),
              Failure::role};
    o.named = Named::another;
    return o;
  }
  const PatroniMember* self = find_member(view, obs.node);
  if (self != nullptr && self->role == "standby_leader") {
    return {false, "Patroni: this node leads a standby cluster (standby_leader), not writable",
            Failure::role};
  }
  Opinion o{false, "Patroni names no leader (failover in progress or DCS trouble)", Failure::role};
  o.named = obs.quorum ? Named::nobody : Named::unknown;
  return o;
}

// A write probe that failed on a read-write primary: the setup it needs is missing (its table,
// schema or grants: dbcheck's configuration), or the node refuses the write (53100: disk
// full), or it did not finish in time.
Opinion write_probe_opinion(const ProbeError& e) {
  if (e.code == "42P01" || e.code == "3F000" || e.code == "42501") {
    return {
        false,
        util::format("the write probe cannot run as configured: {}: create its table and "
                     "grants with `dbcheck setup-sql postgres` (docs/sql/healthcheck-role.sql), "
                     "or set write_probe = false",
                     e.detail),
        Failure::config};
  }
  return {false, util::format("{} (write probe)", describe_failure("PostgreSQL", e)), e.kind};
}

Opinion node_writer_opinion(const WriterObservation& obs) {
  if (!obs.node_answer) {
    return {false, describe_failure("PostgreSQL", obs.node_answer.error()),
            obs.node_answer.error().kind};
  }
  if (obs.node_answer->in_recovery) {
    return {false, "PostgreSQL is in recovery (a standby, or a promotion not yet finished)",
            Failure::role};
  }
  if (obs.node_answer->read_only) {
    return {false, "PostgreSQL is read-only (transaction_read_only = on)", Failure::role};
  }
  const NodeRole& n = *obs.node_answer;
  if (obs.write_probe && !*obs.write_probe) {
    return write_probe_opinion(obs.write_probe->error());
  }
  if (n.connections && n.connection_limit && *n.connections >= *n.connection_limit) {
    // Seen over a connection kept open (the agent): alive, but no one else gets in.
    Opinion o{false,
              util::format("PostgreSQL is read-write but full: {} of {} connections in use",
                           *n.connections, *n.connection_limit),
              Failure::saturated};
    o.role_known = true;
    return o;
  }
  return {true,
          obs.write_probe ? "PostgreSQL is read-write, not in recovery, and extended a table "
                            "(write probe, rolled back)"
                          : "PostgreSQL is read-write, not in recovery",
          Failure::none};
}

} // namespace

Verdict evaluate_writer(const WriterObservation& obs, SaturationPolicy saturation) {
  Verdict v =
      combine_writer_opinions(manager_writer_opinion(obs), node_writer_opinion(obs), saturation);
  // Only the leader's own Patroni, asked when the members name this node, reports the
  // cluster's identifier: elsewhere the node is not the writer anyway.
  const LeaderReport* report =
      obs.leader_report && *obs.leader_report ? &**obs.leader_report : nullptr;
  if (report == nullptr && obs.outage) {
    if (const auto held = outage_leader(*obs.outage).leader) {
      report = &*obs.outage->answers[*held].report;
    }
  }
  const auto node_id = obs.node_answer ? obs.node_answer->system_id : std::nullopt;
  const auto cluster_id = report ? report->status.system_id : std::nullopt;
  if (auto mismatch =
          identity_mismatch(node_id, cluster_id,
                            util::format("Patroni (GET {}/primary)", report ? report->url : ""))) {
    // Whatever the rest says: the address reaches another cluster's data.
    v.state = State::down;
    v.failure = Failure::identity;
    v.reason = std::move(*mismatch);
    return v;
  }
  if (v.state == State::up && obs.node_answer) { // a node that did not answer says so already
    if (const std::string unchecked = identity_unchecked(
            node_id, cluster_id, "Patroni's GET /primary has no database_system_identifier");
        !unchecked.empty()) {
      v.reason += "; " + unchecked;
    }
  }
  return v;
}

namespace {

// The node's stream and lag, once Patroni lets it read: `member` names it in the reason (its
// role and name), `after` is said last.
Verdict judge_stream(const ReplicaStatus& node, const ReplicaObservation& obs, double max_lag_s,
                     const std::string& member, const std::string& after) {
  if (!node.receiver_present) {
    return {State::down, Failure::not_ready,
            "no WAL receiver is running (archive-only recovery, or the stream is down)"};
  }
  if (!node.receiver_status) {
    return {State::down, Failure::config,
            "pg_stat_wal_receiver.status is hidden from the check user: create its views with "
            "`dbcheck setup-sql postgres` (docs/sql/healthcheck-role.sql)"};
  }
  if (*node.receiver_status != "streaming") {
    return {State::down, Failure::not_ready,
            util::format("WAL receiver is {}, not streaming", *node.receiver_status)};
  }
  if (node.received_timeline && obs.leader_timeline &&
      *node.received_timeline != *obs.leader_timeline) {
    return {State::down, Failure::not_ready,
            util::format("replica receives timeline {}, the leader writes timeline {}",
                         *node.received_timeline, *obs.leader_timeline)};
  }
  const std::string paused = node.replay_paused ? "; replay is paused" : "";
  const std::string max_text = util::format_seconds(max_lag_s);
  if (!obs.lag.seconds) {
    return {State::down, Failure::lag,
            util::format("replica lag cannot be bounded: {}{}", obs.lag.derivation, paused)};
  }
  const double lag = *obs.lag.seconds;
  if (lag > max_lag_s) {
    return {State::down, Failure::lag,
            util::format("replica lag {} > max_lag {} ({}){}", util::format_seconds(lag), max_text,
                         obs.lag.derivation, paused)};
  }
  const std::string unchecked = identity_unchecked(
      node.system_id, obs.leader_system_id, "the leader was not sampled with its identifier");
  return {State::up, Failure::none,
          util::format("streaming {}, lag <= {} (max_lag {}): {}{}{}{}", member,
                       util::format_seconds(lag), max_text, obs.lag.derivation, paused,
                       unchecked.empty() ? "" : "; " + unchecked, after)};
}

// No member gave its view: measured against the leader Patroni keeps without its DCS, as
// Patroni's own GET /replica keeps a running replica then.
Verdict replica_in_outage(const ReplicaStatus& node, const ReplicaObservation& obs,
                          double max_lag_s, ReaderChoice readers) {
  const std::string lead = describe_failure("Patroni", obs.manager.error());
  const OutageReplicaDecision d = outage_leader_for_replica(*obs.outage);
  if (!d.leader) {
    return {State::down, d.kind,
            util::format("{}; asked GET /primary of every member: {}", lead, d.why)};
  }
  if (readers == ReaderChoice::synchronous) {
    return {State::down, Failure::policy,
            util::format("{}: which members are synchronous standbys is kept in the DCS, so this "
                         "backend (readers = \"synchronous\") takes none until it can be read",
                         lead)};
  }
  // Only the identifiers tie the node's PostgreSQL to its member's Patroni (identity_mismatch()
  // compared them): another instance on the member's host would pass on its word.
  if (!node.system_id) {
    return {State::down, Failure::config,
            util::format("{}; the node's database system identifier is hidden from the check "
                         "user (create its views with `dbcheck setup-sql postgres`): without the "
                         "members' view only it ties the node to the kept leader's cluster",
                         lead)};
  }
  if (!obs.leader_system_id) {
    return {State::down, Failure::protocol,
            util::format("{}; the kept leader's GET /primary gives no "
                         "database_system_identifier: without the members' view only it ties "
                         "the node to the leader's cluster",
                         lead)};
  }
  return judge_stream(
      node, obs, max_lag_s,
      util::format("replica (its Patroni at {})", obs.outage->answers[*obs.outage->own].url),
      util::format("; no member gives its view of the cluster ({}): {}", obs.manager.error().detail,
                   d.why));
}

} // namespace

Verdict evaluate_replica(const ReplicaObservation& obs, double max_lag_s, ReaderChoice readers) {
  if (!obs.node_answer) {
    return {State::down, obs.node_answer.error().kind,
            describe_failure("PostgreSQL", obs.node_answer.error())};
  }
  const ReplicaStatus& node = *obs.node_answer;
  // First: a node of another cluster is that, whatever its role or Patroni's list says.
  if (auto mismatch = identity_mismatch(node.system_id, obs.leader_system_id,
                                        util::format("its leader {} (sampled)", obs.leader_name))) {
    return {State::down, Failure::identity, std::move(*mismatch)};
  }
  if (!node.in_recovery) {
    return {State::down, Failure::role,
            "PostgreSQL is not in recovery (it is a primary), not a replica"};
  }
  if (!obs.manager) {
    return obs.outage ? replica_in_outage(node, obs, max_lag_s, readers)
                      : Verdict{State::down, obs.manager.error().kind,
                                describe_failure("Patroni", obs.manager.error())};
  }
  const PatroniMember* self = find_member(*obs.manager, obs.node);
  if (self == nullptr) {
    std::string unresolved;
    for (const auto& m : obs.manager->members) {
      if (!m.unresolved.empty()) {
        unresolved += util::format("{}{}", unresolved.empty() ? "" : "; ", m.unresolved);
      }
    }
    return {State::down, unresolved.empty() ? Failure::role : Failure::network,
            util::format("Patroni does not list {} as a member of the cluster{}",
                         util::to_string(obs.node),
                         unresolved.empty() ? ""
                                            : util::format(" (a member's name did not resolve to "
                                                           "one address: {})",
                                                           unresolved))};
  }
  // Two members can share an address (a rebuilt host's stale member key, a copied
  // connect_address): when one of them holds the leader lock, the address is the writer's.
  if (const PatroniMember* leader = find_leader(*obs.manager);
      leader != nullptr && util::same_endpoint(leader->address, obs.node)) {
    self = leader;
  }
  if (is_leader_role(self->role)) {
    return {State::down, Failure::role,
            util::format("Patroni names this node ({}) leader", self->name)};
  }
  if (self->noloadbalance) {
    return {State::down, Failure::policy,
            util::format("Patroni member {} is tagged noloadbalance", self->name)};
  }
  if (readers == ReaderChoice::synchronous && !is_synchronous_role(self->role)) {
    return {State::down, Failure::policy,
            util::format("Patroni member {} is not a synchronous standby (role {}): this backend "
                         "takes synchronous and quorum standbys only (readers = \"synchronous\")",
                         self->name, self->role)};
  }
  return judge_stream(
      node, obs, max_lag_s,
      util::format("{} {}", is_synchronous_role(self->role) ? self->role : "replica", self->name),
      "");
}

} // namespace dbcheck::core
