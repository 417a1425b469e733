#include "status_table.hpp"

#include <util/format.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>
#include <string>

namespace dbcheck::extcheck {
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
  return cell.up ? "UP" : util::format("DOWN {}", cell.failure);
}

// `text` with every control character (ESC, CR, LF...) as '?': peers' words (Patroni's lag,
// Sentinel's flags, Redis's link state, reasons quoting them) must not drive the terminal or
// break the screen's lines.
std::string printable(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      c = '?';
    }
  }
  return text;
}

// `text` cut to `width` columns (bytes: the table is ASCII but for names), "..." at the end;
// 0: not cut.
std::string fit(std::string text, std::size_t width) {
  if (width > 3 && text.size() > width) {
    text.resize(width - 3);
    text += "...";
  }
  return text;
}

// `text` in lines of at most `width` columns, broken at blanks (a word longer than a line
// cut), the lines after the first indented by two; 0: one line.
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
  if (width <= 3 || text.size() <= width) {
    return {text};
  }
  std::vector<std::string> lines;
  std::string rest = text;
  for (;;) {
    const std::size_t room = lines.empty() ? width : width - 2;
    const std::string indent = lines.empty() ? "" : "  ";
    if (rest.size() <= room) {
      lines.push_back(indent + rest);
      return lines;
    }
    const std::size_t blank = rest.rfind(' ', room);
    if (blank == std::string::npos || blank == 0) {
      lines.push_back(indent + fit(rest.substr(0, room + 3), room));
      const std::size_t next = rest.find(' ', room);
      if (next == std::string::npos) {
        return lines;
      }
      rest = rest.substr(next + 1);
    } else {
      lines.push_back(indent + rest.substr(0, blank));
      rest = rest.substr(blank + 1);
    }
  }
}

// How a column's entries give way when the screen is narrow.
enum class Cut {
  end,  // "replica, streaming, time..." (texts)
  head, // "...prod-1" (names: their ends tell them apart)
};

// `text` padded to exactly `n` columns, or cut as `cut` says with "..." marking the cut.
std::string column(const std::string& text, std::size_t n, Cut cut) {
  std::string out = text;
  if (out.size() > n && n > 3) {
    out = cut == Cut::end ? out.substr(0, n - 3) + "..." : "..." + out.substr(out.size() - (n - 3));
  }
  out.resize(n, ' ');
  return out;
}

// A text table: each column as wide as its widest entry, within its bound when the screen is
// narrow (`bounded`), cut with "..." beyond it; no trailing blanks.
struct Table {
  struct Column {
    std::string head;
    std::size_t max_width;
    Cut cut = Cut::end;
  };
  std::vector<Column> columns;
  std::vector<std::vector<std::string>> rows;

  std::string render(bool bounded) const {
    std::vector<std::size_t> w;
    for (std::size_t i = 0; i < columns.size(); ++i) {
      std::size_t n = columns[i].head.size();
      for (const auto& r : rows) {
        n = std::max(n, r[i].size());
      }
      w.push_back(bounded ? std::min(n, columns[i].max_width) : n);
    }
    const auto line = [&](const auto& cell_of) {
      std::string out;
      for (std::size_t i = 0; i < columns.size(); ++i) {
        out += (i == 0 ? "" : " ") + column(printable(cell_of(i)), w[i], columns[i].cut);
      }
      while (!out.empty() && out.back() == ' ') {
        out.pop_back();
      }
      return out + '\n';
    };
    std::string out = line([&](std::size_t i) { return columns[i].head; });
    for (const auto& r : rows) {
      out += line([&](std::size_t i) { return r[i]; });
    }
    return out;
  }
};

// Patroni's lag in bytes in at most 7 characters, exact enough to act on: "0", "512B",
// "3.1MiB", "12GiB"; anything not a number of bytes ("unknown") as Patroni said it.
std::string bytes_cell(const std::string& lag) {
  if (lag.empty() || lag.size() > 18 || lag.find_first_not_of("0123456789") != std::string::npos) {
    return lag;
  }
  double v = std::stod(lag);
  if (v == 0) {
    return "0";
  }
  static constexpr const char* k_units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  std::size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(k_units)) {
    v /= 1024;
    ++u;
  }
  return u == 0 || v >= 10 ? util::format("{:.0f}{}", v, k_units[u])
                           : util::format("{:.1f}{}", v, k_units[u]);
}

// "*" when a node's text changed since the last screen.
std::string mark(const StatusNode* before, const std::string StatusNode::*field,
                 const StatusNode& now) {
  return before != nullptr && before->*field != now.*field ? "*" : "";
}

// The verdicts: NODE, MANAGER, one column per backend. Bounds keep a three-node, two-backend
// cluster inside 80 columns.
std::string verdict_table(const ClusterStatus& c, const std::vector<ClusterStatus>* previous,
                          bool bounded) {
  Table t{{{"NODE", 26, Cut::head}, {"MANAGER", 18}}, {}};
  for (const auto& b : c.backends) {
    t.columns.push_back({b, 15});
  }
  for (const auto& n : c.nodes) {
    const StatusNode* before = earlier(previous, c, n);
    std::vector<std::string> row{n.name + ' ' + n.address,
                                 mark(before, &StatusNode::manager, n) + n.manager};
    for (std::size_t b = 0; b < c.backends.size(); ++b) {
      if (b >= n.cells.size()) {
        row.emplace_back("?");
        continue;
      }
      const bool changed =
          before != nullptr && b < before->cells.size() && before->cells[b].up != n.cells[b].up;
      row.push_back((changed ? "*" : "") + cell_text(n.cells[b]));
    }
    t.rows.push_back(std::move(row));
  }
  return t.render(bounded);
}

// The lag bound as a table cell: "0.02", "312", "unknown", or "" when no reader check ran.
std::string lag_cell(const StatusNode& n) {
  if (n.lag_s) {
    return *n.lag_s < 100 ? util::format("{:.2f}", *n.lag_s) : util::format("{:.0f}", *n.lag_s);
  }
  return n.lag_derivation.empty() ? "" : "unknown";
}

// What each node says: the manager's timeline and lag (when it gives them), the node's own
// answer and the lag bound in seconds. Bounds keep it inside 80 columns.
std::string opinion_table(const ClusterStatus& c, const std::vector<ClusterStatus>* previous,
                          bool bounded) {
  bool timeline = false, manager_lag = false;
  for (const auto& n : c.nodes) {
    timeline = timeline || !n.timeline.empty();
    manager_lag = manager_lag || !n.manager_lag.empty();
  }
  // 14 + 3 + 7 + 44 + 7 and the blanks between: 79 columns.
  Table t{{{"NODE", 14, Cut::head}}, {}};
  if (timeline) {
    t.columns.push_back({"TL", 3});
  }
  if (manager_lag) {
    t.columns.push_back({"LAG(B)", 7});
  }
  t.columns.push_back({"OWN ANSWER", 44});
  t.columns.push_back({"LAG(S)", 7});
  for (const auto& n : c.nodes) {
    const StatusNode* before = earlier(previous, c, n);
    std::vector<std::string> row{n.name};
    if (timeline) {
      row.push_back(n.timeline);
    }
    if (manager_lag) {
      row.push_back(bytes_cell(n.manager_lag));
    }
    row.push_back(mark(before, &StatusNode::own, n) + n.own);
    row.push_back(lag_cell(n));
    t.rows.push_back(std::move(row));
  }
  return t.render(bounded);
}

// Each Sentinel's answer. 21 + 21 + 29 + 5 and the blanks: 79 columns ("255.255.255.255:26379"
// whole; flags such as "master,failover_in_progress" whole).
std::string sentinel_table(const ClusterStatus& c, bool bounded) {
  Table t{
      {{"SENTINEL", 21, Cut::head}, {"NAMES MASTER", 21, Cut::head}, {"FLAGS", 29}, {"EPOCH", 5}},
      {}};
  for (const auto& s : c.sentinels) {
    t.rows.push_back({s.address, s.names, s.flags, s.epoch});
  }
  return t.render(bounded);
}

} // namespace

std::string render_status_text(const std::vector<ClusterStatus>& now,
                               const std::vector<ClusterStatus>* previous, std::size_t width) {
  std::string out;
  // A table's lines (their cells already printable), each cut to the screen.
  const auto add_table = [&](const std::string& table) {
    std::size_t from = 0;
    while (from < table.size()) {
      const std::size_t nl = std::min(table.find('\n', from), table.size());
      out += fit(table.substr(from, nl - from), width) + '\n';
      from = nl + 1;
    }
  };
  // One line of text that may quote a peer (a reason, a derivation): made printable whole, so
  // a line break inside it cannot start a line of its own, then cut to the screen.
  const auto add_line = [&](const std::string& text) { out += fit(printable(text), width) + '\n'; };
  for (const auto& c : now) {
    add_line(util::format("{} ({}): {}", c.name, c.engine, c.manager));
    add_table(verdict_table(c, previous, width > 0));
    // Right below the rows they are about (nodes that may be missing), not below a long list;
    // wrapped, not cut: their ends say what to do.
    for (const auto& note : c.notes) {
      for (const auto& l : wrap("note: " + printable(note), width)) {
        out += l + '\n';
      }
    }
    if (!c.nodes.empty()) {
      add_table(opinion_table(c, previous, width > 0));
    }
    if (!c.sentinels.empty()) {
      add_table(sentinel_table(c, width > 0));
    }
    std::vector<std::string> lag, why;
    for (const auto& n : c.nodes) {
      if (!n.lag_derivation.empty()) {
        lag.push_back(util::format("  {}: {}", n.name, n.lag_derivation));
      }
      for (std::size_t b = 0; b < c.backends.size() && b < n.cells.size(); ++b) {
        if (!n.cells[b].up) {
          why.push_back(util::format("  {} {}: {}", c.backends[b], n.name, n.cells[b].reason));
        }
      }
    }
    if (!lag.empty()) {
      add_line("lag in seconds, how it was bounded:");
      for (const auto& l : lag) {
        add_line(l);
      }
    }
    if (!why.empty()) {
      add_line("why DOWN:");
      for (const auto& w : why) {
        add_line(w);
      }
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
                       {"timeline", n.timeline},
                       {"manager_lag", n.manager_lag},
                       {"own", n.own},
                       {"lag_s", n.lag_s ? nlohmann::json(*n.lag_s) : nlohmann::json(nullptr)},
                       {"lag_derivation", n.lag_derivation},
                       {"verdicts", verdicts}});
    }
    nlohmann::json sentinels = nlohmann::json::array();
    for (const auto& s : c.sentinels) {
      sentinels.push_back(
          {{"address", s.address}, {"names", s.names}, {"flags", s.flags}, {"epoch", s.epoch}});
    }
    clusters.push_back({{"name", c.name},
                        {"engine", c.engine},
                        {"manager", c.manager},
                        {"backends", c.backends},
                        {"nodes", nodes},
                        {"sentinels", sentinels},
                        {"notes", c.notes}});
  }
  // Peers' words may not be UTF-8: replaced, never an exception.
  return nlohmann::json{{"clusters", clusters}}.dump(2, ' ', false,
                                                     nlohmann::json::error_handler_t::replace) +
         '\n';
}

} // namespace dbcheck::extcheck
