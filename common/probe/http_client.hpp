#pragma once
// Parallel HTTP GETs that stop at the first acceptable answer or the deadline, and the POST of
// a switchover (libcurl; plain http:// GETs through libevent: plain_http.hpp).

#include "deadline.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dbcheck::probe {

// What happened to the GET of one URL.
struct HttpAttempt {
  std::string url;   // without credentials
  long status = 0;   // HTTP status, 0 when no response
  std::string error; // transport error or why the answer was not accepted; empty if accepted
  bool timed_out = false;
  double latency_ms = 0;
};

// Transport settings shared by all the GETs of one call.
struct HttpOptions {
  std::optional<std::string> cafile;      // CA bundle for https
  std::optional<std::string> certfile;    // client certificate (PEM) for https, with keyfile
  std::optional<std::string> keyfile;     // its private key (PEM)
  std::size_t max_body = 4 * 1024 * 1024; // an answer larger than this is refused, not buffered
};

// HTTP basic authentication (Patroni's restapi.authentication).
struct HttpCredentials {
  std::string user;
  std::string password;
};

// The answer to one request: the attempt (status, error, latency) and the body.
struct HttpReply {
  HttpAttempt attempt;
  std::string body;
};

// Called with each finished GET (its index among the URLs and its reply, transport failures
// included); returns true when no further answer is needed. Runs on the calling thread.
using EnoughFn = std::function<bool(std::size_t index, HttpReply& reply)>;

// --- Interface ---

// Ends the attempt of a GET still running (or never started) when get_all returns: "not
// needed" when the answers in already decided (`stopped`), else timed out. Both clients say
// it the same way, so a reason reads alike whichever one asked.
inline void end_unfinished(HttpAttempt& a, bool stopped, Clock::time_point started) {
  a.latency_ms = elapsed_ms(started, Clock::now());
  if (stopped) {
    a.error = "not needed: the answers already in decide";
  } else {
    a.timed_out = true;
    a.error = "no answer before the deadline";
  }
}

// GETs every URL at once; hands each finished transfer to `enough` and returns when it says
// so, when all have finished, or at `deadline`, whichever comes first. Transfers still
// running then are aborted and reported as "not needed" (stopped early) or timed out.
// Returns one reply per URL, in the order given. Never throws; never outlives the deadline by
// more than the client's timer granularity (~1 ms). Plain http:// to IP addresses goes
// through plain_get_all (plain_http.hpp), anything else through curl_get_all (http_route.cpp).
std::vector<HttpReply> get_all(const std::vector<std::string>& urls, const HttpOptions& options,
                               const Deadline& deadline, const EnoughFn& enough);

// get_all's contract, with libcurl: https, host names, credentials in the URL.
std::vector<HttpReply> curl_get_all(const std::vector<std::string>& urls,
                                    const HttpOptions& options, const Deadline& deadline,
                                    const EnoughFn& enough);

// POSTs `json_body` (Content-Type: application/json) to `url`, with basic authentication when
// `credentials` are given (refused, as an error, unless `url` is https://), and returns
// whatever status and body came back by `deadline`.
// Never throws; never outlives the deadline by more than libcurl's granularity.
HttpReply post_json(const std::string& url, const std::string& json_body,
                    const std::optional<HttpCredentials>& credentials, const HttpOptions& options,
                    const Deadline& deadline);

// The libcurl actually loaded ("7.88.1"), for --version.
std::string libcurl_version();

} // namespace dbcheck::probe
