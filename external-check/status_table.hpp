#pragma once
// `dbcheck status`: every node of a cluster in one table, the manager's view beside the
// verdict of each backend that uses the cluster. Built from reports already taken (no I/O).

#include <optional>
#include <string>
#include <vector>

namespace dbcheck::extcheck {

// One backend's verdict on one node.
struct StatusCell {
  std::string backend;
  bool up = false;
  std::string failure; // the failure class when down ("role", "lag", "timeout"...)
  std::string reason;
};

// One node: who the manager says it is, what it says itself, and each backend's verdict.
struct StatusNode {
  std::string name;              // the manager's name for it, else HAProxy's server name
  std::string address;           // host:port
  std::string manager;           // "leader running", "replica streaming", "master 3/3", or ""
  std::vector<StatusCell> cells; // in ClusterStatus::backends order
  std::string timeline;          // the manager's timeline for it (Patroni), or ""
  std::string manager_lag;     // the manager's lag for it in bytes (Patroni: "0", "unknown"), or ""
  std::string own;             // its own answer in a few words ("replica, streaming, timeline 4")
  std::optional<double> lag_s; // the reader check's lag bound in seconds, when it has one
  std::string lag_derivation;  // how that bound was derived, or why there is none; "" if no
                               // reader check ran on it
};

// One Sentinel's answer: whom it names master, with its flags and config epoch.
struct SentinelRow {
  std::string address; // the Sentinel's host:port
  std::string names;   // the master's host:port, "nil" (unknown name), or "no answer (<class>)"
  std::string flags;   // SENTINEL MASTER's flags ("master", "master,o_down"), or ""
  std::string epoch;   // its config epoch, or ""
};

// One cluster's screen.
struct ClusterStatus {
  std::string name;
  std::string engine;  // "postgres" or "redis"
  std::string manager; // one line: whom the manager names, or why it could not be read
  std::vector<std::string> backends;
  std::vector<StatusNode> nodes;
  std::vector<std::string> notes;     // what could not be shown, and why
  std::vector<SentinelRow> sentinels; // Redis: each configured Sentinel's answer
};

// --- Interface ---

// The clusters as text: per cluster a title line; a table of verdicts (NODE, MANAGER, one
// column per backend: UP, or DOWN and the failure class), the notes right below it ("note:
// ..."); a table of what each node says (the manager's timeline and lag, the node's own
// answer, the lag bound in seconds); for Redis each Sentinel's answer; then how each lag was
// derived and why each DOWN is DOWN. A cell, manager role or own answer that differs from
// `previous` (the last screen, when redrawing) is marked '*'. With `width` > 0 no line is
// longer (long texts are cut with "..."); 0: nothing is cut.
std::string render_status_text(const std::vector<ClusterStatus>& now,
                               const std::vector<ClusterStatus>* previous, std::size_t width);

// The clusters as one JSON document: {"clusters": [{name, engine, manager, backends,
// nodes: [{name, address, manager, timeline, manager_lag, own, lag_s, lag_derivation,
// verdicts: {backend: {state, failure, reason}}}], sentinels: [{address, names, flags,
// epoch}], notes}]}.
std::string render_status_json(const std::vector<ClusterStatus>& now);

} // namespace dbcheck::extcheck
