// The only file that includes libevent's headers.
#include "plain_http.hpp"

#include <util/url.hpp>

#include <fmt/format.h>

#include <event2/buffer.h>
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

// A response header block larger than this is refused (curl's own limit is 100 KiB).
constexpr ev_ssize_t k_max_headers = 64 * 1024;

struct Call;

// One GET: where its reply goes and what libevent said of it.
struct Transfer {
  Call* call = nullptr;
  std::size_t index = 0;
  Clock::time_point started;
  std::string origin; // "10.0.0.1:8008", for the reasons
  long status = 0;    // the status line's code, once the headers are in
  std::optional<evhttp_request_error> error;
  bool done = false;
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

// Why a GET failed, in words; `err` is errno as libevent left it for the callback.
std::string failure_words(const Transfer& t, int err, const HttpOptions& options) {
  const auto with_cause = [&](std::string what) {
    // errno is meaningful only where a socket call failed; EAGAIN is the event loop's own.
    if (err != 0 && err != EAGAIN) {
      what += fmt::format(": {}", std::strerror(err));
    }
    return what;
  };
  if (!t.error) {
    // libevent ends a connect that failed with a request that has no status and no error: one
    // refused (its shutdown() of the never-connected socket then leaves ENOTCONN) or one that
    // failed at once (errno still says why). Its own timeout never comes first (backstop).
    return err == ENOTCONN ? fmt::format("cannot connect to {}: connection refused", t.origin)
                           : with_cause(fmt::format("cannot connect to {}", t.origin));
  }
  switch (*t.error) {
  case EVREQ_HTTP_TIMEOUT:
    return "no answer before the deadline";
  case EVREQ_HTTP_EOF:
    if (t.status != 0) {
      return fmt::format("{} closed the connection in the middle of its answer", t.origin);
    }
    // errno saved by libevent: why the socket failed (unreachable, reset), if it did.
    return err != 0 && err != EAGAIN && err != ENOTCONN
               ? with_cause(fmt::format("no answer from {}", t.origin))
               : fmt::format("{} closed the connection before answering", t.origin);
  case EVREQ_HTTP_INVALID_HEADER:
    return fmt::format("{} did not answer in HTTP (bad status line or headers)", t.origin);
  case EVREQ_HTTP_BUFFER_ERROR:
    return with_cause(fmt::format("reading from {} failed", t.origin));
  case EVREQ_HTTP_REQUEST_CANCEL:
    return "cancelled";
  case EVREQ_HTTP_DATA_TOO_LONG:
    return t.status == 0 ? fmt::format("answer headers larger than {} bytes", k_max_headers)
                         : fmt::format("answer larger than {} bytes", options.max_body);
  }
  return "unknown HTTP failure";
}

// The status line and headers are in: keep the status, for a failure that follows.
extern "C" int on_headers(evhttp_request* req, void* arg) {
  static_cast<Transfer*>(arg)->status = evhttp_request_get_response_code(req);
  return 0;
}

// libevent names the failure here, just before it calls on_done without a request.
extern "C" void on_error(evhttp_request_error error, void* arg) {
  static_cast<Transfer*>(arg)->error = error;
}

// A GET has ended, answered (req with a status) or not (no req, or one without a status).
extern "C" void on_done(evhttp_request* req, void* arg) {
  const int err = errno;
  auto* t = static_cast<Transfer*>(arg);
  Call& call = *t->call;
  HttpReply& r = call.replies[t->index];
  t->done = true;
  r.attempt.latency_ms = elapsed_ms(t->started, Clock::now());
  const int code = req != nullptr ? evhttp_request_get_response_code(req) : 0;
  if (code != 0 && !t->error) {
    r.attempt.status = code;
    evbuffer* in = evhttp_request_get_input_buffer(req);
    const std::size_t n = evbuffer_get_length(in);
    if (n > call.options.max_body) {
      r.attempt.error = fmt::format("answer larger than {} bytes", call.options.max_body);
    } else {
      r.body.resize(n);
      evbuffer_copyout(in, r.body.data(), n);
      if (code != 200) {
        r.attempt.error = fmt::format("HTTP {}", code);
      }
    }
  } else {
    r.attempt.status = t->status; // a failure after the headers is the server's (protocol)
    r.attempt.timed_out = t->error == EVREQ_HTTP_TIMEOUT;
    r.attempt.error = failure_words(*t, err, call.options);
  }
  // Every finished reply is handed over, also after `enough` said stop, as curl's get_all does.
  call.stop = call.enough(t->index, r) || call.stop;
  if (call.stop || --call.pending == 0) {
    event_base_loopbreak(call.base);
  }
}

// libevent writes its warnings to stderr, which HAProxy logs as the check's output; every
// failure reaches the reply instead (on_error, on_done).
extern "C" void no_log(int /*severity*/, const char* /*message*/) {}

using BasePtr = std::unique_ptr<event_base, decltype(&event_base_free)>;
using ConnectionPtr = std::unique_ptr<evhttp_connection, decltype(&evhttp_connection_free)>;

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
  BasePtr base(event_base_new(), &event_base_free);
  Call call{replies, options, enough, base.get()};
  std::vector<std::unique_ptr<Transfer>> transfers;
  // Declared after the transfers: freed first, so no callback can reach a freed Transfer.
  std::vector<ConnectionPtr> connections;
  // libevent's own timeouts stay behind the deadline's timer, which alone ends the GETs.
  const timeval backstop = to_timeval(deadline.remaining() + std::chrono::seconds{1});

  for (std::size_t i = 0; i < urls.size() && !call.stop; ++i) {
    HttpReply& r = replies[i];
    r.attempt.url = util::redact_url(urls[i]);
    auto& t = *transfers.emplace_back(std::make_unique<Transfer>());
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
      evhttp_request* req = con != nullptr ? evhttp_request_new(&on_done, &t) : nullptr;
      if (con != nullptr) {
        connections.emplace_back(con, &evhttp_connection_free);
        evhttp_connection_set_timeout_tv(con, &backstop);
        evhttp_connection_set_retries(con, 0);
        evhttp_connection_set_max_headers_size(con, k_max_headers);
        // One byte over the cap is enough to refuse: never buffer more than we keep.
        evhttp_connection_set_max_body_size(
            con, static_cast<ev_ssize_t>(std::min<std::size_t>(options.max_body, 1UL << 40)));
      }
      if (req != nullptr) {
        evhttp_request_set_header_cb(req, &on_headers);
        evhttp_request_set_error_cb(req, &on_error);
        evkeyvalq* headers = evhttp_request_get_output_headers(req);
        evhttp_add_header(headers, "Host", target->host_header.c_str());
        evhttp_add_header(headers, "User-Agent", "dbcheck");
        evhttp_add_header(headers, "Connection", "close");
        // Counted first: a connect that fails at once ends the GET (on_done) inside the call.
        ++call.pending;
        if (evhttp_make_request(con, req, EVHTTP_REQ_GET, target->target.c_str()) == 0) {
          continue;
        }
        // Only an allocation failed (libevent keeps req then: a leak, not a double free).
        --call.pending;
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
      HttpAttempt& a = replies[t->index].attempt;
      a.latency_ms = elapsed_ms(t->started, Clock::now());
      if (call.stop) {
        a.error = "not needed: the answers already in decide";
      } else {
        a.timed_out = true;
        a.error = "no answer before the deadline";
      }
    }
  }
  // URLs never started because the answers already decided.
  for (std::size_t i = transfers.size(); i < urls.size(); ++i) {
    replies[i].attempt.url = util::redact_url(urls[i]);
    replies[i].attempt.error = "not needed: the answers already in decide";
  }
  return replies;
}

std::string libevent_version() {
  return event_get_version();
}

} // namespace dbcheck::probe
