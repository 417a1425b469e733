#include "drain_state.hpp"

namespace dbcheck::agent {

void DrainState::resume(bool marker_present, probe::Clock::time_point now,
                        probe::Clock::duration ready_window) {
  if (marker_present) {
    m_ready_until = now + ready_window;
  }
}

DrainChange DrainState::update(std::string why, probe::Clock::time_point now,
                               probe::Clock::duration ready_window) {
  DrainChange c;
  const bool was = draining();
  const bool is = !why.empty();
  c.started = !was && is;
  c.ended = was && !is;
  if (c.ended) {
    m_ready_until = now + ready_window;
  }
  if (m_ready_until && now >= *m_ready_until) {
    m_ready_until.reset();
    c.forget_marker = true;
  }
  m_reason = std::move(why);
  return c;
}

} // namespace dbcheck::agent
