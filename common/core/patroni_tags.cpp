#include "patroni_tags.hpp"

#include <string>

namespace dbcheck::core {

bool truthy_tag(const nlohmann::json& v) {
  if (v.is_boolean()) {
    return v.get<bool>();
  }
  if (v.is_number()) {
    return v.get<double>() != 0.0;
  }
  if (v.is_string()) {
    return !v.get_ref<const std::string&>().empty();
  }
  return !v.is_null() && !v.empty(); // an array or an object
}

} // namespace dbcheck::core
