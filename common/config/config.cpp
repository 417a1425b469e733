#include "config.hpp"

namespace dbcheck::config {

std::string_view to_string(Role role) {
  return role == Role::primary ? "primary" : "replica";
}

const std::string& name_of(const Cluster& cluster) {
  return std::visit([](const auto& c) -> const std::string& { return c.name; }, cluster);
}

} // namespace dbcheck::config
