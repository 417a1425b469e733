#pragma once
// `dbcheck status`: every node of a cluster in one table, the manager's view beside the
// verdict of each backend that uses the cluster. Built from reports already taken (no I/O).

#include <optional>
#include <string>
#include <vector>

namespace dbcheck::core {

// One backend's verdict on one node.
struct StatusCell {
  std::string backend;
  bool up = false;
  std::string failure; // the failure class when down ("role", "lag", "timeout"...)
  std::string reason;
};

// One node: who the manager says it is, and each backend's verdict.
struct StatusNode {
  std::string name;    // the manager's name for it, else HAProxy's server name
  std::string address; // host:port
  std::string manager; // "leader running", "replica streaming", "master 3/3", or ""
  std::vector<StatusCell> cells; // in ClusterStatus::backends order
};

// One cluster's screen.
struct ClusterStatus {
  std::string name;
  std::string engine;  // "postgres" or "redis"
  std::string manager; // one line: whom the manager names, or why it could not be read
  std::vector<std::string> backends;
  std::vector<StatusNode> nodes;
  std::vector<std::string> notes; // what could not be shown, and why
};

// --- Interface ---

// The clusters as text: per cluster a title line, a table (NODE, MANAGER, one column per
// backend: UP, or DOWN and the failure class), then why each DOWN is DOWN. A cell or manager
// that differs from `previous` (the last screen, when redrawing) is marked '*'. With `width`
// > 0 no line is longer (long reasons are cut with "..."); 0: nothing is cut.
std::string render_status_text(const std::vector<ClusterStatus>& now,
                               const std::vector<ClusterStatus>* previous, std::size_t width);

// The clusters as one JSON document: {"clusters": [{name, engine, manager, backends,
// nodes: [{name, address, manager, verdicts: {backend: {state, failure, reason}}}], notes}]}.
std::string render_status_json(const std::vector<ClusterStatus>& now);

} // namespace dbcheck::core
