#pragma once
// A password held in memory only: one immutable copy, shared by every holder, wiped when the
// last one lets go.

#include <memory>
#include <string>

namespace dbcheck::config {

// A secret with no formatter and no stream operator on purpose, so it cannot leak into logs.
// Copies share one buffer (a check thread copying its cluster's settings each round makes no
// new copy of the password).
class Secret {
public:
  // An empty secret: no password configured.
  Secret() = default;
  // Takes ownership of `value`.
  explicit Secret(std::string value) : m_value(std::make_shared<const Wiped>(std::move(value))) {}
  // The secret itself, for handing to a client library only.
  const std::string& reveal() const { return m_value ? m_value->text : empty_text(); }
  // True when no password was configured.
  bool empty() const { return !m_value || m_value->text.empty(); }

private:
  // The bytes, overwritten before their memory is freed.
  struct Wiped {
    explicit Wiped(std::string t) : text(std::move(t)) {}
    Wiped(const Wiped&) = delete;
    Wiped& operator=(const Wiped&) = delete;
    ~Wiped();
    std::string text;
  };
  static const std::string& empty_text();
  std::shared_ptr<const Wiped> m_value;
};

} // namespace dbcheck::config
