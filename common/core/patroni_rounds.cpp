#include "patroni_rounds.hpp"

#include <util/format.hpp>
#include <util/url.hpp>

#include <algorithm>

namespace dbcheck::core {
namespace {

// The host part of a base URL ("" when it has none), IPv6 brackets stripped.
std::string base_host(const std::string& base) {
  const auto o = util::url_origin(base);
  const auto host_start = o ? o->find("://") : std::string::npos;
  const auto port_colon = o ? o->rfind(':') : std::string::npos;
  if (host_start == std::string::npos || port_colon == std::string::npos ||
      port_colon <= host_start + 3) {
    return "";
  }
  std::string host = o->substr(host_start + 3, port_colon - host_start - 3);
  if (host.size() > 2 && host.front() == '[') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

bool same_host(const std::string& a, const std::string& b) {
  return util::same_endpoint(util::HostPort{a, 1}, util::HostPort{b, 1});
}

// The wait of a round but the last, `left` before the deadline, `fastest` the quickest answer
// with a view heard so far (none: the fixed cap).
std::chrono::nanoseconds round_wait(std::chrono::nanoseconds left,
                                    std::optional<std::chrono::nanoseconds> fastest) {
  std::chrono::nanoseconds cap = k_first_round_wait;
  if (fastest) {
    cap = std::clamp<std::chrono::nanoseconds>(k_round_wait_factor * *fastest, k_min_round_wait,
                                               k_first_round_wait);
  }
  return std::min(cap, left / 3);
}

} // namespace

PatroniRounds::PatroniRounds(std::size_t configured, std::optional<std::size_t> own,
                             bool own_denial_decides)
    : m_configured(configured), m_own(own), m_own_denial_decides(own_denial_decides),
      m_order(configured), m_said(configured), m_finished(configured, false) {
  for (std::size_t i = 0; i < configured; ++i) {
    m_order[i] = i;
  }
  if (m_own && *m_own < configured) {
    const auto at = m_order.begin() + static_cast<std::ptrdiff_t>(*m_own);
    std::rotate(m_order.begin(), at, at + 1);
  } else {
    m_own.reset();
  }
  if (m_own && m_own_denial_decides) {
    m_limits.push_back(1);
  }
  m_limits.push_back(first_round(configured));
  m_limits.push_back(configured);
}

std::optional<PatroniRound> PatroniRounds::next(std::chrono::nanoseconds left) {
  left = std::max(left, std::chrono::nanoseconds{0});
  if (m_denied || (m_rounds > 0 && (election_decided(answers_in(), m_configured) ||
                                    left == std::chrono::nanoseconds{0}))) {
    return std::nullopt;
  }
  while (m_next_limit < m_limits.size()) {
    const std::size_t upto = m_limits[m_next_limit++];
    PatroniRound round;
    for (std::size_t k = 0; k < m_configured; ++k) {
      // Not yet asked, or cut at the end of the round before: ask now.
      if ((k >= m_asked && k < upto) || (k < m_asked && !m_finished[m_order[k]])) {
        round.members.push_back(m_order[k]);
      }
    }
    m_asked = std::max(m_asked, upto);
    if (round.members.empty()) {
      continue;
    }
    round.last = upto >= m_configured;
    round.own_alone = m_own && m_own_denial_decides && upto == 1;
    round.wait = round.last ? left : round_wait(left, m_fastest);
    m_pending = round.members.size();
    m_last = round.last;
    m_own_alone = round.own_alone;
    ++m_rounds;
    return round;
  }
  return std::nullopt;
}

bool PatroniRounds::take(std::size_t member, MemberAnswer answer, std::chrono::nanoseconds took) {
  if (m_pending > 0) {
    --m_pending;
  }
  if (answer.view && (!m_fastest || took < *m_fastest)) {
    m_fastest = std::max(took, std::chrono::nanoseconds{0});
  }
  m_finished[member] = true;
  m_said[member] = std::move(answer);
  const std::vector<MemberAnswer> in = answers_in();
  return election_decided(in, m_configured) ||
         (!m_last && !election_possible(in, m_pending, m_configured));
}

void PatroniRounds::cut(std::size_t member, MemberAnswer why) {
  m_finished[member] = false;
  m_said[member] = std::move(why);
}

const ClusterView* PatroniRounds::own_view_to_check() const {
  if (!m_own_alone || !m_said[*m_own] || !m_said[*m_own]->view ||
      find_leader(*m_said[*m_own]->view) == nullptr) {
    return nullptr;
  }
  return &*m_said[*m_own]->view;
}

bool PatroniRounds::own_denies(const ClusterView& resolved, const util::HostPort& node) {
  const PatroniMember* leader = find_leader(resolved);
  m_denied = m_denied || (leader != nullptr && leader->unresolved.empty() &&
                          !util::same_endpoint(leader->address, node));
  return m_denied;
}

std::vector<MemberAnswer> PatroniRounds::answers_in() const {
  std::vector<MemberAnswer> out;
  for (std::size_t i = 0; i < m_configured; ++i) {
    if (m_finished[i]) {
      out.push_back(*m_said[i]);
    }
  }
  return out;
}

std::vector<MemberAnswer> PatroniRounds::answers() const {
  std::vector<MemberAnswer> out;
  for (const std::size_t i : m_order) {
    if (m_said[i]) {
      out.push_back(*m_said[i]);
    }
  }
  return out;
}

std::optional<std::size_t> PatroniRounds::first_agreeing(const ClusterView& elected) const {
  for (const std::size_t i : m_order) {
    if (m_said[i] && m_said[i]->view && leader_label(*m_said[i]->view) == leader_label(elected)) {
      return i;
    }
  }
  return std::nullopt;
}

std::optional<std::size_t> own_member(const std::vector<std::string>& bases,
                                      const util::HostPort& node) {
  std::optional<std::size_t> own;
  for (std::size_t i = 0; i < bases.size(); ++i) {
    if (same_host(base_host(bases[i]), node.host)) {
      if (own) {
        return std::nullopt;
      }
      own = i;
    }
  }
  return own;
}

std::optional<LeaderBase> leader_base(const PatroniMember& leader,
                                      const std::vector<std::string>& bases) {
  const auto origin = util::url_origin(leader.api_url);
  for (const auto& b : bases) {
    if (origin && util::url_origin(b) == origin) {
      return LeaderBase{b, "its api_url"};
    }
  }
  for (const auto& b : bases) {
    const std::string host = base_host(b);
    if (!host.empty() && (same_host(host, leader.address.host) ||
                          (!leader.advertised.empty() && same_host(host, leader.advertised)))) {
      return LeaderBase{b, util::format("the configured URL on its host, not its api_url \"{}\"",
                                        util::redact_url(leader.api_url))};
    }
  }
  if (origin) {
    return LeaderBase{*origin, "its api_url: no configured URL reaches that server or its host"};
  }
  return std::nullopt;
}

} // namespace dbcheck::core
