#include "shared_view.hpp"

#include <util/format.hpp>

#include <algorithm>

namespace dbcheck::core {
namespace {

// FNV-1a, 64 bits, of `parts` each ended by a newline: a file name, not a secret (no part holds
// a credential).
std::uint64_t name_hash(const std::vector<std::string>& parts) {
  std::uint64_t h = 14695981039346656037ULL;
  const auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ULL;
  };
  for (const auto& b : parts) {
    for (const char c : b) {
      mix(static_cast<unsigned char>(c));
    }
    mix('\n');
  }
  return h;
}

} // namespace

std::string shared_view_key(const std::vector<std::string>& redacted_bases) {
  return util::format("patroni-{:016x}", name_hash(redacted_bases));
}

std::string check_mark_key(const std::string& backend, const std::string& node) {
  return util::format("check-{:016x}", name_hash({backend, node}));
}

std::optional<std::chrono::milliseconds>
auto_shared_view_max_age(std::optional<std::chrono::nanoseconds> since_last) {
  using namespace std::chrono_literals;
  if (!since_last || *since_last <= 0ns || *since_last > 10s) {
    return std::nullopt;
  }
  const auto half = std::chrono::duration_cast<std::chrono::milliseconds>(*since_last / 2);
  if (half <= 0ms) {
    return std::nullopt;
  }
  return std::min<std::chrono::milliseconds>(half, 2s);
}

bool shared_view_fresh(std::chrono::nanoseconds steady_age, std::chrono::nanoseconds real_age,
                       std::chrono::milliseconds max_age) {
  using std::chrono::nanoseconds;
  const auto within = [&](nanoseconds a) { return a >= nanoseconds{0} && a <= max_age; };
  return within(steady_age) && within(real_age) && clocks_agree(steady_age, real_age);
}

bool clocks_agree(std::chrono::nanoseconds steady, std::chrono::nanoseconds real) {
  const std::chrono::nanoseconds apart = steady > real ? steady - real : real - steady;
  return apart <= std::chrono::seconds{1};
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
