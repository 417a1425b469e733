#include "driver.hpp"

#include <config/password_file.hpp>
#include <probe/run_check.hpp>
#include <util/format.hpp>

#include <algorithm>

namespace dbcheck::switchover {

using namespace std::chrono_literals;

using probe::Clock;
using probe::Deadline;

tl::expected<std::optional<Operator>, std::string>
operator_of(const std::optional<std::string>& user, const std::optional<std::string>& file) {
  if (!user && !file) {
    return std::nullopt;
  }
  if (!file) {
    return tl::make_unexpected("operator_user is set but operator_password_file is not");
  }
  auto secret = config::read_password_file(*file);
  if (!secret) {
    return tl::make_unexpected(secret.error());
  }
  return Operator{user.value_or(""), std::move(*secret)};
}

Deadline step_within(probe::Peers& peers, const Deadline& by) {
  return Deadline{std::min(by.at(), peers.now() + k_step)};
}

core::Report writer_check(const std::shared_ptr<probe::Peers>& peers,
                          const config::Cluster& cluster, const util::HostPort& node,
                          const Deadline& within) {
  const auto now = peers->now();
  config::Backend b;
  b.name = "switchover";
  b.cluster = config::name_of(cluster);
  b.role = config::Role::primary;
  b.timeout = util::Duration{std::max<long long>(
      100, std::chrono::duration_cast<std::chrono::milliseconds>(within.at() - now).count())};
  return probe::run_check_with(peers, cluster, b, node, now);
}

long long whole_seconds(Clock::duration d) {
  return std::max<long long>(0, std::chrono::ceil<std::chrono::seconds>(d).count());
}

std::string not_an_ip(const util::HostPort& addr, const std::string& what) {
  if (util::is_ip_literal(addr.host)) {
    return {};
  }
  return util::format("{} {} is a host name: dbcheck switchover needs IP literals there (the "
                      "Sentinel asked to fail over must be the one counted a moment before, and "
                      "a name may resolve elsewhere in between)",
                      what, util::to_string(addr));
}

} // namespace dbcheck::switchover
