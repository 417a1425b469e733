#include "shared_view.hpp"

#include <util/format.hpp>

namespace dbcheck::core {

std::string shared_view_key(const std::vector<std::string>& redacted_bases) {
  // FNV-1a, 64 bits: a name, not a secret (the URLs are given without credentials).
  std::uint64_t h = 14695981039346656037ULL;
  const auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ULL;
  };
  for (const auto& b : redacted_bases) {
    for (const char c : b) {
      mix(static_cast<unsigned char>(c));
    }
    mix('\n');
  }
  return util::format("patroni-{:016x}", h);
}

bool shared_view_fresh(std::chrono::nanoseconds steady_age, std::chrono::nanoseconds real_age,
                       std::chrono::milliseconds max_age) {
  using std::chrono::nanoseconds;
  const auto within = [&](nanoseconds a) { return a >= nanoseconds{0} && a <= max_age; };
  const nanoseconds apart = steady_age > real_age ? steady_age - real_age : real_age - steady_age;
  return within(steady_age) && within(real_age) && apart <= std::chrono::seconds{1};
}

bool shared_view_fits_writer(const ClusterView& view, const util::HostPort& node,
                             const NodeRole& role) {
  if (!role.in_recovery && !role.read_only) {
    return false;
  }
  const PatroniMember* leader = find_leader(view);
  return leader == nullptr || !util::same_endpoint(leader->address, node);
}

bool shared_view_fits_reader(const ClusterView& view, const util::HostPort& node,
                             const ReplicaStatus& status,
                             std::optional<std::uint32_t> sampled_timeline, bool leader_hung) {
  const PatroniMember* leader = find_leader(view);
  if (leader == nullptr) {
    return find_standby_leader(view) != nullptr;
  }
  if (util::same_endpoint(leader->address, node)) {
    return !status.in_recovery;
  }
  if (!sampled_timeline) {
    return leader_hung;
  }
  return !status.received_timeline || *status.received_timeline == *sampled_timeline;
}

} // namespace dbcheck::core
