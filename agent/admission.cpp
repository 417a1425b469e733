#include "admission.hpp"

#include <utility>

namespace dbcheck::agent {

std::optional<Drop> refuse_at_accept(const Arrival& a, const AdmissionLimits& limits) {
  if (!a.allowed) {
    return Drop::not_allowed;
  }
  if (a.open >= limits.max_connections) {
    return Drop::limit;
  }
  if (a.open_from_peer >= limits.per_address) {
    return Drop::address_limit;
  }
  return std::nullopt;
}

std::optional<Drop> refuse_waiting(std::size_t waiting, std::size_t waiting_from_peer,
                                   const AdmissionLimits& limits) {
  // Both limits at once: a crowd of addresses each under its share waits, and so does one busy
  // address while the port is otherwise quiet (one HAProxy checking many servers).
  if (waiting >= limits.waiting_total && waiting_from_peer >= limits.waiting_per_address) {
    return Drop::address_limit;
  }
  return std::nullopt;
}

bool reset_on_refusal(Drop why) {
  return why == Drop::not_allowed || why == Drop::address_limit;
}

std::optional<std::uint64_t> DropLog::count(Drop why, std::chrono::steady_clock::time_point now) {
  const auto i = static_cast<std::size_t>(why);
  ++m_unlogged[i];
  if (m_logged_at[i] && now - *m_logged_at[i] < k_drop_log_every) {
    return std::nullopt;
  }
  m_logged_at[i] = now;
  return std::exchange(m_unlogged[i], 0);
}

} // namespace dbcheck::agent
