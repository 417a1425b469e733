#include "config.hpp"

namespace dbcheck::config {

std::string_view to_string(Role role) {
  return role == Role::primary ? "primary" : "replica";
}

} // namespace dbcheck::config
