#include "redis_identity.hpp"

#include <util/format.hpp>

#include <map>

namespace dbcheck::core {

std::string run_id_from_info(const std::string& info) {
  constexpr std::string_view k_key = "run_id:";
  std::size_t at = 0;
  while (at < info.size()) {
    const std::size_t end = info.find('\n', at);
    std::string_view line(info.data() + at, (end == std::string::npos ? info.size() : end) - at);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.substr(0, k_key.size()) == k_key) {
      return std::string{line.substr(k_key.size())};
    }
    if (end == std::string::npos) {
      break;
    }
    at = end + 1;
  }
  return {};
}

std::optional<std::string> run_id_mismatch(const std::vector<SentinelAnswer>& answers,
                                           const util::HostPort& node, std::size_t needed,
                                           const NodeRunId& run_id) {
  if (run_id.outcome != NodeRunId::Outcome::known || run_id.value.empty()) {
    return std::nullopt;
  }
  // Only the Sentinels that name this node speak of its instance; each counts once.
  std::map<std::string, std::size_t> seen;
  std::map<std::string, bool> counted;
  for (const auto& a : answers) {
    const std::string who = util::to_string(a.sentinel);
    if (!a.view || a.view->unsettled() || !a.view->master ||
        !util::same_endpoint(*a.view->master, node) || a.view->run_id.empty() || counted[who]) {
      continue;
    }
    counted[who] = true;
    ++seen[a.view->run_id];
  }
  for (const auto& [known, count] : seen) {
    if (count >= needed && known != run_id.value) {
      return util::format(
          "identity: Redis's run_id {} is not the {} that {} Sentinels last read from this "
          "master: it restarted since they looked (empty, if it keeps no data on disk) or "
          "another server answers at this address; no writer until they have seen it (they "
          "read INFO every 10 s)",
          run_id.value, known, count);
    }
  }
  return std::nullopt;
}

} // namespace dbcheck::core
