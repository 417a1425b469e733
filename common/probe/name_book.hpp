#pragma once
// The host names one check met, looked up once each (Peers::resolve, within the deadline), and
// the matching rule applied to them (core/endpoint_names.hpp).

#include "deadline.hpp"
#include "peers.hpp"

#include <core/endpoint_names.hpp>
#include <core/report.hpp>
#include <util/host_port.hpp>

#include <optional>
#include <vector>

namespace dbcheck::probe {

// The names one check resolved, for the `node` it checks.
class NameBook {
public:
  // --- Interface ---

  // An empty book for a check of `node` (its address family picks among a name's addresses).
  NameBook(Peers& peers, util::HostPort node) : m_peers(peers), m_node(std::move(node)) {}

  // Resolves the names among `endpoints` not looked up yet, by `deadline`. Returns the step
  // that reports the lookups (`what` names whose they are), or nothing when none was needed.
  std::optional<core::Step> look_up(const std::vector<util::HostPort>& endpoints,
                                    const std::string& what, const Deadline& deadline);

  // The endpoint to compare and connect to in place of `named` (core::canonical_endpoint).
  util::HostPort canonical(const util::HostPort& named) const;

  // Why `named` stays a name, or "" (core::unresolved_because).
  std::string unresolved(const util::HostPort& named) const;

private:
  Peers& m_peers;
  util::HostPort m_node;
  std::vector<core::NameAnswer> m_answers;
};

} // namespace dbcheck::probe
