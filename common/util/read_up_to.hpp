#pragma once
// Reading a file's bytes from a descriptor: read(2) may return less than asked, or be interrupted.

#include <cstddef>
#include <optional>

namespace dbcheck::util {

// --- Interface ---

// Reads from `fd` into `buf` until end of file or `cap` bytes, retrying short and interrupted
// reads; the number of bytes read, or nullopt on the first failure, with errno as read(2)
// left it.
std::optional<std::size_t> read_up_to(int fd, char* buf, std::size_t cap);

} // namespace dbcheck::util
