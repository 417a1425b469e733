#include "report.hpp"

#include <util/format.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace dbcheck::core {
std::string render_line(const Report& r) {
  return util::format("{} {} {}: {}", r.backend, r.node, to_label(r.verdict.state),
                      r.verdict.reason);
}

std::string render_text(const Report& r) {
  std::string out = util::format("backend {} (role {}), node {}\n", r.backend, r.role, r.node);
  if (!r.auth.empty()) {
    out += util::format("  {:<14} {}\n", "auth", r.auth);
  }
  for (const auto& s : r.steps) {
    out += util::format("  {:<14} {} {}\n  {:<14} -> {} ({:.1f} ms)\n", s.opinion, s.peer, s.asked,
                        "", s.answer, s.latency_ms);
  }
  if (r.lag) {
    out += util::format("  lag            {}: {}\n",
                        r.lag->seconds ? util::format("{:.3f}s", *r.lag->seconds) : "unknown",
                        r.lag->derivation);
  }
  out += util::format("verdict: {} (failure: {}) in {:.1f} ms of {:.0f} ms: {}\n",
                      to_label(r.verdict.state), to_string(r.verdict.failure), r.elapsed_ms,
                      r.deadline_ms, r.verdict.reason);
  return out;
}

std::string render_json(const Report& r) {
  using nlohmann::json;
  json steps = json::array();
  for (const auto& s : r.steps) {
    steps.push_back({{"opinion", s.opinion},
                     {"peer", s.peer},
                     {"asked", s.asked},
                     {"answer", s.answer},
                     {"latency_ms", s.latency_ms}});
  }
  json doc = {{"backend", r.backend},
              {"node", r.node},
              {"role", r.role},
              {"verdict",
               {{"state", to_string(r.verdict.state)},
                {"failure", to_string(r.verdict.failure)},
                {"reason", r.verdict.reason}}},
              {"steps", steps},
              {"elapsed_ms", r.elapsed_ms},
              {"deadline_ms", r.deadline_ms}};
  doc["auth"] = r.auth.empty() ? json(nullptr) : json(r.auth);
  if (r.lag) {
    doc["lag"] = {{"seconds", r.lag->seconds ? json(*r.lag->seconds) : json(nullptr)},
                  {"derivation", r.lag->derivation}};
  } else {
    doc["lag"] = nullptr;
  }
  // Peers' texts end up here; invalid UTF-8 from one must not abort the report.
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace dbcheck::core
