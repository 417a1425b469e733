#include "patroni_tags.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace dbcheck::core {

bool truthy_tag(const nlohmann::json& v) {
  if (v.is_boolean()) {
    return v.get<bool>();
  }
  if (v.is_number_integer()) {
    return v.get<long long>() != 0;
  }
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s == "true" || s == "yes" || s == "on" || s == "1";
  }
  return false;
}

} // namespace dbcheck::core
