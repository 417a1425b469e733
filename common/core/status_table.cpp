#include "status_table.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace dbcheck::core {
namespace {

// The same node in an earlier screen of the same cluster (by address), or nullptr.
const StatusNode* earlier(const std::vector<ClusterStatus>* previous, const ClusterStatus& c,
                          const StatusNode& n) {
  if (previous == nullptr) {
    return nullptr;
  }
  for (const auto& pc : *previous) {
    if (pc.name != c.name) {
      continue;
    }
    for (const auto& pn : pc.nodes) {
      if (pn.address == n.address) {
        return &pn;
      }
    }
  }
  return nullptr;
}

std::string cell_text(const StatusCell& cell) {
  return cell.up ? "UP" : fmt::format("DOWN {}", cell.failure);
}

// `text` cut to `width` columns (bytes: the table is ASCII but for names), "..." at the end.
std::string fit(std::string text, std::size_t width) {
  if (width > 3 && text.size() > width) {
    text.resize(width - 3);
    text += "...";
  }
  return text;
}

// `text` padded (or cut) to exactly `n` columns.
std::string column(const std::string& text, std::size_t n) {
  std::string out = text.size() > n ? text.substr(0, n) : text;
  out.resize(n, ' ');
  return out;
}

} // namespace

std::string render_status_text(const std::vector<ClusterStatus>& now,
                               const std::vector<ClusterStatus>* previous, std::size_t width) {
  std::string out;
  for (const auto& c : now) {
    out += fit(fmt::format("{} ({}): {}", c.name, c.engine, c.manager), width) + '\n';
    // Columns: node (name and address), manager, one per backend; each as wide as its widest
    // entry, within bounds that keep a three-node, two-backend cluster inside 80 columns.
    std::size_t node_w = 4, manager_w = 7;
    for (const auto& n : c.nodes) {
      node_w = std::max(node_w, n.name.size() + 1 + n.address.size());
      manager_w = std::max(manager_w, n.manager.size() + 1);
    }
    node_w = std::min<std::size_t>(node_w, 26);
    manager_w = std::min<std::size_t>(manager_w, 18);
    std::vector<std::size_t> backend_w;
    for (std::size_t b = 0; b < c.backends.size(); ++b) {
      std::size_t w = c.backends[b].size();
      for (const auto& n : c.nodes) {
        if (b < n.cells.size()) {
          w = std::max(w, cell_text(n.cells[b]).size() + 1); // +1: the change mark
        }
      }
      backend_w.push_back(std::min<std::size_t>(w, 15));
    }
    std::string head = column("NODE", node_w) + ' ' + column("MANAGER", manager_w);
    for (std::size_t b = 0; b < c.backends.size(); ++b) {
      head += ' ' + column(c.backends[b], backend_w[b]);
    }
    while (!head.empty() && head.back() == ' ') {
      head.pop_back();
    }
    out += head + '\n';
    std::vector<std::string> why;
    for (const auto& n : c.nodes) {
      const StatusNode* before = earlier(previous, c, n);
      const bool manager_changed = before != nullptr && before->manager != n.manager;
      std::string line = column(n.name + ' ' + n.address, node_w) + ' ' +
                         column((manager_changed ? "*" : "") + n.manager, manager_w);
      for (std::size_t b = 0; b < c.backends.size(); ++b) {
        if (b >= n.cells.size()) {
          line += ' ' + column("?", backend_w[b]);
          continue;
        }
        const StatusCell& cell = n.cells[b];
        const bool changed = before != nullptr && b < before->cells.size() &&
                             before->cells[b].up != cell.up;
        line += ' ' + column((changed ? "*" : "") + cell_text(cell), backend_w[b]);
        if (!cell.up) {
          why.push_back(fit(fmt::format("  {} {}: {}", c.backends[b], n.name, cell.reason), width));
        }
      }
      while (!line.empty() && line.back() == ' ') {
        line.pop_back();
      }
      out += line + '\n';
    }
    if (!why.empty()) {
      out += "why DOWN:\n";
      for (const auto& w : why) {
        out += w + '\n';
      }
    }
    for (const auto& note : c.notes) {
      out += fit("note: " + note, width) + '\n';
    }
    out += '\n';
  }
  return out;
}

std::string render_status_json(const std::vector<ClusterStatus>& now) {
  nlohmann::json clusters = nlohmann::json::array();
  for (const auto& c : now) {
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& n : c.nodes) {
      nlohmann::json verdicts = nlohmann::json::object();
      for (std::size_t b = 0; b < c.backends.size() && b < n.cells.size(); ++b) {
        const StatusCell& cell = n.cells[b];
        verdicts[c.backends[b]] = {{"state", cell.up ? "up" : "down"},
                                   {"failure", cell.up ? "none" : cell.failure},
                                   {"reason", cell.reason}};
      }
      nodes.push_back({{"name", n.name},
                       {"address", n.address},
                       {"manager", n.manager},
                       {"verdicts", verdicts}});
    }
    clusters.push_back({{"name", c.name},
                        {"engine", c.engine},
                        {"manager", c.manager},
                        {"backends", c.backends},
                        {"nodes", nodes},
                        {"notes", c.notes}});
  }
  return nlohmann::json{{"clusters", clusters}}.dump(2) + '\n';
}

} // namespace dbcheck::core
