#pragma once
// When one check may use the Patroni view another check on this host took moments ago.
//
// Why share: HAProxy forks one external check per server per backend per interval, and each
// asked a majority of the Patroni members for the same view: about twice the requests of
// Patroni's own httpchk (docs/results.md, cluster-bill). The view is shared for a short
// max_age only, and only where it cannot pass what a live view would fail: a writable node's
// writer check always asks the members; a replica's writer check fails on its own word; a
// reader's view must fit the leader's live WAL sample and the node's own state. When it does
// not fit (a leader that cannot be sampled, a new timeline, no leader), the members are asked
// again at once.

#include "patroni_cluster.hpp"
#include "pg_verdict.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dbcheck::core {

// --- Interface ---

// The file name a cluster's shared view is kept under: "patroni-" and 16 hex digits of a hash
// of its Patroni URLs (given without credentials), in their configured order.
std::string shared_view_key(const std::vector<std::string>& redacted_bases);

// The file name a check's marks are kept under (auto_shared_view_max_age): "check-" and 16 hex
// digits of a hash of HAProxy's backend and the node, so each server of each backend has its own.
std::string check_mark_key(const std::string& backend, const std::string& node);

// shared_view_max_age "auto": the age a check may reuse views at, from `since_last`, the time
// since the previous check of the same server in the same backend started on this host
// (HAProxy's inter plus that check's own run): half of it, so a round of checks shares one view
// and the next round asks anew; at most 2 s. Nullopt (ask the members) when there was no such
// check within the last 10 s (the server's first, or one HAProxy checks that rarely), or the
// time cannot be a cadence (none, negative, under 2 ms).
std::optional<std::chrono::milliseconds>
auto_shared_view_max_age(std::optional<std::chrono::nanoseconds> since_last);

// True when the same stretch of time, `steady` by the monotonic clock and `real` by the wall
// clock, agrees within a second: otherwise the two were not of one boot, or a clock stepped.
bool clocks_agree(std::chrono::nanoseconds steady, std::chrono::nanoseconds real);

// True when a view written `steady_age` ago by the monotonic clock and `real_age` ago by the
// wall clock may be used at `max_age`: both ages within it, and the two within a second of each
// other (a view kept across a reboot has a monotonic age that means nothing).
bool shared_view_fresh(std::chrono::nanoseconds steady_age, std::chrono::nanoseconds real_age,
                       std::chrono::milliseconds max_age);

// Writer check: true when the node says it is not a writable primary (in recovery or
// read-only) and the shared view does not name it leader: it fails by its own word and the
// view's. Otherwise its members and its own GET /primary are asked live: a writable node (a
// majority that moved on must take it out at once, as without sharing), or one the view names.
// So a shared view can take a writer down, never keep one up.
bool shared_view_fits_writer(const ClusterView& view, const util::HostPort& node,
                             const NodeRole& role);

// Reader check: true when the shared view agrees with what was asked live: it names this node
// leader and the node is not in recovery; or it names another leader that was sampled, on the
// timeline the replica receives, or that did not answer by its deadline (`leader_hung`: asking
// the members again would only spend the time the replica's own bound needs, and the bound
// then rests on the replica's last replay, as when the members name a hung leader); or it names
// a standby_leader (a standby cluster).
bool shared_view_fits_reader(const ClusterView& view, const util::HostPort& node,
                             const ReplicaStatus& status,
                             std::optional<std::uint32_t> sampled_timeline, bool leader_hung);

} // namespace dbcheck::core
