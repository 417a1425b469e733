// The only file that includes curl.h.
#include "http_client.hpp"

#include <util/format.hpp>
#include <util/url.hpp>

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>

namespace dbcheck::probe {
namespace {

struct Transfer {
  std::size_t index = 0;
  std::string body;
  std::size_t max_body = 0;
  bool too_big = false;
  bool done = false;
  std::array<char, CURL_ERROR_SIZE> errbuf{};
  Clock::time_point started;
};

extern "C" std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t bytes = size * n;
  if (t->body.size() + bytes > t->max_body) {
    t->too_big = true;
    return 0; // makes curl fail the transfer with CURLE_WRITE_ERROR
  }
  t->body.append(data, bytes);
  return bytes;
}

void global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

using MultiPtr = std::unique_ptr<CURLM, decltype(&curl_multi_cleanup)>;
using EasyPtr = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;

// The options every request of ours carries: bounded by `budget_ms`, never through a proxy or
// a redirect, body into `t` (capped), errors into t's buffer.
void set_common_options(CURL* h, const std::string& url, long budget_ms, Transfer& t,
                        const HttpOptions& options) {
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  // Never wait for a resolver thread at cleanup: a member whose name does not resolve must
  // not hold the answer of one that did (curl >= 7.87).
  curl_easy_setopt(h, CURLOPT_QUICK_EXIT, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, budget_ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, budget_ms);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*"); // never route a health check through a proxy
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "dbcheck");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, t.errbuf.data());
  if (options.cafile) {
    curl_easy_setopt(h, CURLOPT_CAINFO, options.cafile->c_str());
  }
  if (options.certfile && options.keyfile) {
    // Patroni's restapi.verify_client: the member refuses a TLS client without a certificate.
    curl_easy_setopt(h, CURLOPT_SSLCERT, options.certfile->c_str());
    curl_easy_setopt(h, CURLOPT_SSLKEY, options.keyfile->c_str());
    // An encrypted key fails at once instead of OpenSSL asking a terminal for its passphrase.
    curl_easy_setopt(h, CURLOPT_KEYPASSWD, "");
  }
}

// True when a finished transfer failed as a transport (too big, the deadline, a curl error),
// with the reason in a.error (and a.timed_out set for the deadline).
bool transport_failed(const Transfer& t, CURLcode rc, const HttpOptions& options, HttpAttempt& a) {
  if (t.too_big) {
    a.error = util::format("answer larger than {} bytes", options.max_body);
  } else if (rc == CURLE_OPERATION_TIMEDOUT) {
    a.timed_out = true;
    a.error = "no answer before the deadline";
  } else if (rc != CURLE_OK) {
    a.error = t.errbuf[0] != '\0' ? std::string{t.errbuf.data()} : curl_easy_strerror(rc);
  } else {
    return false;
  }
  return true;
}

} // namespace

std::vector<HttpReply> curl_get_all(const std::vector<std::string>& urls,
                                    const HttpOptions& options, const Deadline& deadline,
                                    const EnoughFn& enough) {
  global_init_once();
  std::vector<HttpReply> replies(urls.size());
  MultiPtr multi(curl_multi_init(), &curl_multi_cleanup);
  std::vector<std::unique_ptr<Transfer>> transfers;
  std::vector<EasyPtr> easies;
  const long budget_ms = std::max(1, deadline.remaining_ms());

  for (std::size_t i = 0; i < urls.size(); ++i) {
    replies[i].attempt.url = util::redact_url(urls[i]);
    auto t = std::make_unique<Transfer>();
    t->index = i;
    t->max_body = options.max_body;
    t->started = Clock::now();
    EasyPtr easy(curl_easy_init(), &curl_easy_cleanup);
    if (!multi || !easy) {
      replies[i].attempt.error = "cannot allocate an HTTP transfer";
      t->done = true;
      transfers.push_back(std::move(t));
      continue;
    }
    CURL* h = easy.get();
    set_common_options(h, urls[i], budget_ms, *transfers.emplace_back(std::move(t)), options);
    curl_easy_setopt(h, CURLOPT_PRIVATE, transfers.back().get());
    curl_multi_add_handle(multi.get(), h);
    easies.push_back(std::move(easy));
  }

  bool stop = false;
  int running = static_cast<int>(easies.size());
  while (running > 0 && !stop && !deadline.expired()) {
    curl_multi_perform(multi.get(), &running);
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi.get(), &queued)) {
      if (msg->msg != CURLMSG_DONE) {
        continue;
      }
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      HttpReply& r = replies[t->index];
      t->done = true;
      r.attempt.latency_ms = elapsed_ms(t->started, Clock::now());
      curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &r.attempt.status);
      if (!transport_failed(*t, msg->data.result, options, r.attempt)) {
        r.body = std::move(t->body);
        if (r.attempt.status != 200) {
          r.attempt.error = util::format("HTTP {}", r.attempt.status);
        }
      }
      // Every finished reply is handed over, also after `enough` said stop: those that
      // arrived in the same batch are answers too.
      stop = enough(t->index, r) || stop;
    }
    if (running > 0 && !stop) {
      const int wait = std::clamp(deadline.remaining_ms(), 0, 50);
      curl_multi_poll(multi.get(), nullptr, 0, wait, nullptr);
    }
  }
  for (auto& t : transfers) {
    if (!t->done) {
      end_unfinished(replies[t->index].attempt, stop, t->started);
    }
  }
  for (auto& e : easies) {
    curl_multi_remove_handle(multi.get(), e.get());
  }
  return replies;
}

HttpReply post_json(const std::string& url, const std::string& json_body,
                    const std::optional<HttpCredentials>& credentials, const HttpOptions& options,
                    const Deadline& deadline) {
  global_init_once();
  HttpReply reply;
  reply.attempt.url = util::redact_url(url);
  if (credentials && url.rfind("https://", 0) != 0) {
    // Basic authentication is the password itself, base64-encoded: never in clear text.
    reply.attempt.error = "refusing to send the operator's credentials over plain http://: use "
                          "an https:// Patroni URL (Patroni's restapi certfile)";
    return reply;
  }
  Transfer t;
  t.max_body = options.max_body;
  t.started = Clock::now();
  EasyPtr easy(curl_easy_init(), &curl_easy_cleanup);
  if (!easy) {
    reply.attempt.error = "cannot allocate an HTTP transfer";
    return reply;
  }
  using HeaderList = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;
  HeaderList headers(curl_slist_append(nullptr, "Content-Type: application/json"),
                     &curl_slist_free_all);
  CURL* h = easy.get();
  set_common_options(h, url, std::max(1, deadline.remaining_ms()), t, options);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, json_body.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(json_body.size()));
  if (credentials) {
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(h, CURLOPT_USERNAME, credentials->user.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, credentials->password.c_str());
  }
  const CURLcode rc = curl_easy_perform(h);
  reply.attempt.latency_ms = elapsed_ms(t.started, Clock::now());
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &reply.attempt.status);
  transport_failed(t, rc, options, reply.attempt);
  reply.body = std::move(t.body);
  return reply;
}

std::string libcurl_version() {
  const curl_version_info_data* curl = curl_version_info(CURLVERSION_NOW);
  return curl != nullptr ? curl->version : "?";
}

} // namespace dbcheck::probe
