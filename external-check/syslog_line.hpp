#pragma once
// One line to the local syslog socket, never blocking (glibc's syslog() may, on a stalled
// journald or rsyslog, and HAProxy would then kill a check that already had its answer).

#include <string_view>

namespace dbcheck::extcheck {

// --- Interface ---

// Sends "<PRI>Mmm dd hh:mm:ss dbcheck[pid]: line" to /dev/log (facility daemon,
// `severity` as LOG_INFO, LOG_WARNING, ...) with a non-blocking datagram; drops the line when
// the socket is missing or full. Returns true when it was sent.
bool send_syslog(int severity, std::string_view line);

} // namespace dbcheck::extcheck
