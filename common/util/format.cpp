#include "format.hpp"

namespace dbcheck::util {

std::string vformat(fmt::string_view f, fmt::format_args args) {
  return fmt::vformat(f, args);
}

} // namespace dbcheck::util
