#include "name_book.hpp"

#include <algorithm>

namespace dbcheck::probe {

std::optional<core::Step> NameBook::look_up(const std::vector<util::HostPort>& endpoints,
                                            const std::string& what, const Deadline& deadline) {
  std::vector<std::string> names = core::names_to_resolve(endpoints);
  std::erase_if(names,
                [&](const std::string& n) { return core::find_answer(n, m_answers) != nullptr; });
  if (names.empty()) {
    return std::nullopt;
  }
  core::Step step;
  step.opinion = "manager";
  step.asked = "resolve " + what;
  step.peer = "system resolver";
  const auto t0 = m_peers.now();
  auto answers = m_peers.resolve(names, deadline);
  step.latency_ms = elapsed_ms(t0, m_peers.now());
  step.answer = core::describe(answers);
  std::move(answers.begin(), answers.end(), std::back_inserter(m_answers));
  return step;
}

util::HostPort NameBook::canonical(const util::HostPort& named) const {
  return core::canonical_endpoint(named, m_answers, m_node);
}

std::string NameBook::unresolved(const util::HostPort& named) const {
  return core::unresolved_because(named, m_answers, m_node);
}

} // namespace dbcheck::probe
