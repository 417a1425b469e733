// The only file that includes libevent's headers.
#include "plain_http.hpp"

#include <util/format.hpp>
#include <util/url.hpp>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

namespace dbcheck::probe {
namespace {

// A response's status line and headers larger than this are refused (curl 7.88 allows 300 KiB
// in all; a Patroni answer's are under 1 KiB).
constexpr ev_ssize_t k_max_headers = 64 * 1024;
// Unread bytes a connection may hold beyond the headers' cap. libevent bounds the status line,
// the headers and the body itself, but not a chunk-size line: without this, a peer sending an
// endless one grows the buffer and rescans it on every read until the deadline.
constexpr std::size_t k_max_unread = 2 * static_cast<std::size_t>(k_max_headers);

struct Call;

// One GET: where its reply goes and what libevent said of it.
struct EventTransfer {
  Call* call = nullptr;
  std::size_t index = 0;
  Clock::time_point started;
  std::string origin;            // "10.0.0.1:8008", for the reasons
  evhttp_request* req = nullptr; // ours (evhttp_request_own): freed after its connection
  std::optional<evhttp_request_error> error;
  std::string refused; // why we ended it ourselves (an interim answer, an endless line)
  bool done = false;
  bool aborting = false; // an abort is scheduled (abort_soon)
};

// What one plain_get_all shares with its callbacks.
struct Call {
  std::vector<HttpReply>& replies;
  const HttpOptions& options;
  const EnoughFn& enough;
  event_base* base;
  std::size_t pending = 0;
  bool stop = false;
};

// True for the errno values a failing socket leaves: only these are quoted in a reason, since a
// clean end of stream sets none and errno then holds an earlier call's (EINPROGRESS, EINTR).
bool socket_failure(int err) {
  switch (err) {
  case ECONNREFUSED:
  case ECONNRESET:
  case ECONNABORTED:
  case EHOSTUNREACH:
  case EHOSTDOWN:
  case ENETUNREACH:
  case ENETDOWN:
  case ETIMEDOUT:
  case EPIPE:
    return true;
  default:
    return false;
  }
}

// Why a GET failed, in words; `status` is what its status line said (0: none read), `err` errno
// as libevent left it for the callback.
std::string failure_words(const EventTransfer& t, long status, int err,
                          const HttpOptions& options) {
  if (!t.refused.empty()) {
    return t.refused;
  }
  const std::string cause = socket_failure(err) ? util::format(": {}", std::strerror(err)) : "";
  if (!t.error) {
    // libevent ends a refused connect with a request that has no status and no error (its
    // shutdown() of the never-connected socket then leaves ENOTCONN); a connect that fails at
    // once arrives as EVREQ_HTTP_EOF. Its own timeout never comes first (the backstop).
    return err == ENOTCONN ? util::format("cannot connect to {}: connection refused", t.origin)
                           : util::format("cannot connect to {}{}", t.origin, cause);
  }
  switch (*t.error) {
  case EVREQ_HTTP_TIMEOUT:
    return "no answer before the deadline";
  case EVREQ_HTTP_EOF:
    if (status != 0) {
      return util::format("{} closed the connection in the middle of its answer{}", t.origin,
                          cause);
    }
    return cause.empty() ? util::format("{} closed the connection before answering", t.origin)
                         : util::format("no answer from {}{}", t.origin, cause);
  case EVREQ_HTTP_INVALID_HEADER:
    return status == 0
               ? util::format("{} did not answer in HTTP (no valid status line)", t.origin)
               : util::format("{} answered with malformed headers, or more than {} bytes of them",
                              t.origin, k_max_headers);
  case EVREQ_HTTP_BUFFER_ERROR:
    return util::format("reading from {} failed{}", t.origin, cause);
  case EVREQ_HTTP_REQUEST_CANCEL:
    return "cancelled";
  case EVREQ_HTTP_DATA_TOO_LONG: {
    // libevent also says this of a malformed chunk size or trailer.
    const char* coding =
        evhttp_find_header(evhttp_request_get_input_headers(t.req), "Transfer-Encoding");
    return coding != nullptr && std::strstr(coding, "chunked") != nullptr
               ? util::format("answer larger than {} bytes, or its chunked encoding malformed",
                              options.max_body)
               : util::format("answer larger than {} bytes", options.max_body);
  }
  }
  return "unknown HTTP failure";
}

// Hands a finished GET's reply to `enough`, and ends the loop when nothing more is awaited.
void finish(EventTransfer& t, HttpReply& r) noexcept {
  Call& call = *t.call;
  t.done = true;
  try {
    // Every finished reply is handed over, also after `enough` said stop, as curl_get_all does.
    call.stop = call.enough(t.index, r) || call.stop;
  } catch (...) {
    // Nothing may unwind through libevent's C frames; the caller sees the replies so far.
    r.attempt.error = "out of memory handling the answer";
    call.stop = true;
  }
  if (call.stop || --call.pending == 0) {
    event_base_loopbreak(call.base);
  }
}

// A GET has ended: answered (req, with a status and no error) or not (no req).
extern "C" void on_done(evhttp_request* req, void* arg) {
  const int err = errno;
  auto* t = static_cast<EventTransfer*>(arg);
  if (t->done) {
    return;
  }
  const HttpOptions& options = t->call->options;
  HttpReply& r = t->call->replies[t->index];
  r.attempt.latency_ms = elapsed_ms(t->started, Clock::now());
  // The request is ours: its status line's code survives a failure later in the answer.
  const int code = evhttp_request_get_response_code(t->req);
  try {
    if (req != nullptr && code != 0 && !t->error) {
      r.attempt.status = code;
      evbuffer* in = evhttp_request_get_input_buffer(req);
      const std::size_t n = evbuffer_get_length(in);
      if (n > options.max_body) {
        r.attempt.error = util::format("answer larger than {} bytes", options.max_body);
      } else {
        r.body.resize(n);
        evbuffer_copyout(in, r.body.data(), n);
        if (code != 200) {
          r.attempt.error = util::format("HTTP {}", code);
        }
      }
    } else {
      r.attempt.status = code; // a failure after the status line is the server's (protocol)
      r.attempt.timed_out = t->error == EVREQ_HTTP_TIMEOUT;
      r.attempt.error = failure_words(*t, code, err, options);
    }
  } catch (...) {
    r.body.clear();
    r.attempt.error = "out of memory reading the answer";
  }
  finish(*t, r);
}

// libevent names the failure here, just before it calls on_done without a request.
extern "C" void on_error(evhttp_request_error error, void* arg) {
  static_cast<EventTransfer*>(arg)->error = error;
}

// Ends a GET that must not go on, outside libevent's reading (abort_soon): the connection is
// reset (no further callback of ours), the reply says why.
extern "C" void on_abort(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  auto* t = static_cast<EventTransfer*>(arg);
  if (t->done) {
    return;
  }
  evhttp_cancel_request(t->req); // on_error(CANCEL) only: on_done is not called for a cancel
  on_done(nullptr, t);
}

// Schedules on_abort for `t` with `reason`, once; libevent cannot be told to stop from inside
// its own read callbacks.
void abort_soon(EventTransfer& t, std::string reason) {
  if (t.aborting || t.done) {
    return;
  }
  t.aborting = true;
  t.refused = std::move(reason);
  const timeval now{0, 0};
  if (event_base_once(t.call->base, -1, EV_TIMEOUT, &on_abort, &t, &now) != 0) {
    t.aborting = false; // cannot schedule: the deadline ends it instead
  }
}

// The status line and headers are in. An interim answer (1xx) is refused: a GET never asks for
// one, and libevent would keep every interim answer's headers, 64 KiB at a time, unbounded.
extern "C" int on_headers(evhttp_request* req, void* arg) {
  auto* t = static_cast<EventTransfer*>(arg);
  const int code = evhttp_request_get_response_code(req);
  if (code >= 100 && code < 200) {
    t->refused = util::format("{} sent an interim answer ({}) to a GET", t->origin, code);
    return -1; // libevent then fails the request (EVREQ_HTTP_EOF) and calls on_done
  }
  return 0;
}

// Watches a connection's unread bytes (k_max_unread).
extern "C" void on_unread(evbuffer* buffer, const evbuffer_cb_info* /*info*/, void* arg) {
  auto* t = static_cast<EventTransfer*>(arg);
  if (evbuffer_get_length(buffer) > k_max_unread) {
    abort_soon(*t, util::format("answer larger than {} bytes, or its chunked encoding malformed",
                                t->call->options.max_body));
  }
}

// libevent writes its warnings to stderr, which HAProxy logs as the check's output; every
// failure reaches the reply instead (on_error, on_done).
extern "C" void no_log(int /*severity*/, const char* /*message*/) {}

// A base whose timers keep real time to the microsecond (the default is the coarse clock, a few
// ms late) and that ignores EVENT_* variables in the environment.
event_base* new_base() {
  event_config* config = event_config_new();
  if (config == nullptr) {
    return nullptr;
  }
  event_config_set_flag(config, EVENT_BASE_FLAG_PRECISE_TIMER);
  event_config_set_flag(config, EVENT_BASE_FLAG_IGNORE_ENV);
  event_base* base = event_base_new_with_config(config);
  event_config_free(config);
  return base;
}

using BasePtr = std::unique_ptr<event_base, decltype(&event_base_free)>;
using ConnectionPtr = std::unique_ptr<evhttp_connection, decltype(&evhttp_connection_free)>;

// A steady-clock duration as libevent's timeval.
timeval to_timeval(Clock::duration d) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  return timeval{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
}

} // namespace

std::vector<HttpReply> plain_get_all(const std::vector<std::string>& urls,
                                     const HttpOptions& options, const Deadline& deadline,
                                     const EnoughFn& enough) {
  static std::once_flag quiet;
  std::call_once(quiet, [] { event_set_log_callback(&no_log); });
  std::vector<HttpReply> replies(urls.size());
  BasePtr base(new_base(), &event_base_free);
  Call call{replies, options, enough, base.get()};
  // Each EventTransfer frees its request when destroyed, which must come after its connection's
  // end: `connections` is declared later, so it is destroyed first.
  struct EventTransferFree {
    void operator()(EventTransfer* t) const {
      if (t->req != nullptr) {
        evhttp_request_free(t->req);
      }
      delete t;
    }
  };
  std::vector<std::unique_ptr<EventTransfer, EventTransferFree>> transfers;
  std::vector<ConnectionPtr> connections;
  // libevent's own timeouts stay behind the deadline's timer, which alone ends the GETs.
  const timeval backstop = to_timeval(deadline.remaining() + std::chrono::seconds{1});

  for (std::size_t i = 0; i < urls.size() && !call.stop; ++i) {
    HttpReply& r = replies[i];
    r.attempt.url = util::redact_url(urls[i]);
    auto& t = *transfers.emplace_back(new EventTransfer);
    t.call = &call;
    t.index = i;
    t.started = Clock::now();
    const auto target = util::plain_http_target(urls[i]);
    if (!target) {
      r.attempt.error = "not a plain http:// URL to an IP address";
    } else {
      t.origin = target->host_header;
      evhttp_connection* con =
          base ? evhttp_connection_base_new(base.get(), nullptr, target->address.c_str(),
                                            static_cast<ev_uint16_t>(target->port))
               : nullptr;
      t.req = con != nullptr ? evhttp_request_new(&on_done, &t) : nullptr;
      if (con != nullptr) {
        connections.emplace_back(con, &evhttp_connection_free);
        evhttp_connection_set_timeout_tv(con, &backstop);
        evhttp_connection_set_retries(con, 0);
        evhttp_connection_set_max_headers_size(con, k_max_headers);
        // One byte over the cap is enough to refuse: never buffer more than we keep.
        evhttp_connection_set_max_body_size(
            con, static_cast<ev_ssize_t>(std::min<std::size_t>(options.max_body, 1UL << 40)));
        evbuffer_add_cb(bufferevent_get_input(evhttp_connection_get_bufferevent(con)), &on_unread,
                        &t);
      }
      if (t.req != nullptr) {
        evhttp_request_own(t.req); // its status outlives a failure; freed by EventTransferFree
        evhttp_request_set_header_cb(t.req, &on_headers);
        evhttp_request_set_error_cb(t.req, &on_error);
        evkeyvalq* headers = evhttp_request_get_output_headers(t.req);
        evhttp_add_header(headers, "Host", target->host_header.c_str());
        evhttp_add_header(headers, "User-Agent", "dbcheck");
        evhttp_add_header(headers, "Connection", "close");
        // Counted first: a connect that fails at once ends the GET (on_done) inside the call.
        ++call.pending;
        if (evhttp_make_request(con, t.req, EVHTTP_REQ_GET, target->target.c_str()) == 0) {
          continue;
        }
        --call.pending; // only an allocation failed; the request is still ours to free
      }
      r.attempt.error = "cannot allocate an HTTP transfer";
    }
    t.done = true;
    call.stop = enough(i, r) || call.stop;
  }

  if (call.pending > 0 && !call.stop && !deadline.expired()) {
    const timeval left = to_timeval(deadline.remaining());
    event_base_loopexit(base.get(), &left);
    event_base_dispatch(base.get());
  }
  for (auto& t : transfers) {
    if (!t->done) {
      end_unfinished(replies[t->index].attempt, call.stop, t->started);
    }
  }
  // URLs never started because the answers already decided.
  for (std::size_t i = transfers.size(); i < urls.size(); ++i) {
    replies[i].attempt.url = util::redact_url(urls[i]);
    end_unfinished(replies[i].attempt, true, Clock::now());
  }
  return replies;
}

std::string libevent_version() {
  return event_get_version();
}

} // namespace dbcheck::probe
