#pragma once
// Writing a whole buffer to a descriptor: write(2) may take less than asked, or be interrupted.

#include <string_view>

namespace dbcheck::util {

// --- Interface ---

// Writes all of `text` to `fd`, retrying short and interrupted writes. False on the first
// failure, with errno as write(2) left it.
bool write_all(int fd, std::string_view text);

} // namespace dbcheck::util
