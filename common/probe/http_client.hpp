#pragma once
// Parallel HTTP GETs that stop at the first acceptable answer or the deadline (libcurl multi).

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

// The result of asking all URLs: which answer was taken, and each attempt.
struct HttpOutcome {
  std::optional<std::size_t> accepted; // index into attempts of the answer that was taken
  std::string body;                    // its body
  std::vector<HttpAttempt> attempts;   // one per URL, in the order given
};

// Transport settings shared by all the GETs of one call.
struct HttpOptions {
  std::optional<std::string> cafile;      // CA bundle for https
  std::size_t max_body = 4 * 1024 * 1024; // an answer larger than this is refused, not buffered
};

// Judges one 200 answer: returns an empty string to accept it, or why it is refused.
using AcceptFn = std::function<std::string(const std::string& body)>;

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

// --- Interface ---

// GETs every URL at once and returns when one 200 answer passes `accept`, when all have
// finished, or at `deadline`, whichever comes first; transfers still running are aborted.
// Never throws; never outlives the deadline by more than libcurl's poll granularity (~1 ms).
HttpOutcome get_first_accepted(const std::vector<std::string>& urls, const AcceptFn& accept,
                               const HttpOptions& options, const Deadline& deadline);

// POSTs `json_body` (Content-Type: application/json) to `url`, with basic authentication when
// `credentials` are given, and returns whatever status and body came back by `deadline`.
// Never throws; never outlives the deadline by more than libcurl's granularity.
HttpReply post_json(const std::string& url, const std::string& json_body,
                    const std::optional<HttpCredentials>& credentials, const HttpOptions& options,
                    const Deadline& deadline);

} // namespace dbcheck::probe
