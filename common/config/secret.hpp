#pragma once
// A password held in memory only.

#include <string>

namespace dbcheck::config {

// A secret with no formatter and no stream operator on purpose, so it cannot leak into logs.
class Secret {
public:
  // An empty secret: no password configured.
  Secret() = default;
  // Takes ownership of `value`.
  explicit Secret(std::string value) : m_value(std::move(value)) {}
  // The secret itself, for handing to a client library only.
  const std::string& reveal() const { return m_value; }
  // True when no password was configured.
  bool empty() const { return m_value.empty(); }

private:
  std::string m_value;
};

} // namespace dbcheck::config
