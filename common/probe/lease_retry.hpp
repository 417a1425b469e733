#pragma once
// What a lease does when a kept connection fails: the one rule both engines' leases follow
// (connection_cache.hpp).

#include "deadline.hpp"

#include <core/probe_error.hpp>

#include <tl/expected.hpp>

namespace dbcheck::probe {

// --- Interface ---

// Failures after which a connection is not worth keeping. A server error on a fine connection
// (57014, a bad row, a Redis error reply) leaves it usable; these do not.
inline bool breaks_connection(const core::ProbeError& e) {
  return e.kind == core::Failure::network || e.kind == core::Failure::timeout ||
         e.kind == core::Failure::not_ready || e.kind == core::Failure::protocol;
}

// Runs `request()`. When it fails with a network error on a connection that was `reused` (the
// kept connection died while idle: the server restarted, an idle timeout cut it) and
// `deadline` has not come, `reopen()` opens a fresh one and the request is tried once more.
// A failure of `reopen()` is the answer then. `Request` returns tl::expected<T, ProbeError>;
// `Reopen` returns tl::expected<void, ProbeError>.
template <class Request, class Reopen>
auto retry_if_stale(bool reused, const Deadline& deadline, Request request, Reopen reopen)
    -> decltype(request()) {
  auto answer = request();
  if (answer || !reused || answer.error().kind != core::Failure::network || deadline.expired()) {
    return answer;
  }
  if (auto opened = reopen(); !opened) {
    return tl::make_unexpected(opened.error());
  }
  return request();
}

} // namespace dbcheck::probe
