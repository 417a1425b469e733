#pragma once
// Waiting on one socket until it is ready or a deadline passes (poll(), retrying on EINTR).

#include "deadline.hpp"

namespace dbcheck::probe {

// How a wait ended.
enum class Wait { ready, timeout, error };

// --- Interface ---

// Waits for `events` (POLLIN/POLLOUT) on `fd` until `deadline`; error leaves errno set.
Wait wait_fd(int fd, short events, const Deadline& deadline);

} // namespace dbcheck::probe
