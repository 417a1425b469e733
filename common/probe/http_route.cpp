// Which HTTP client a set of GETs takes. libcurl costs a PostgreSQL check about a millisecond
// of CPU to load and initialise (OpenSSL's configuration, libssh2, thirty libraries bound) and
// the PostgreSQL agent 3 MiB resident; a Patroni URL written as http://<IP>:<port> needs none
// of it (docs/results.md, "external-cost", "agent-footprint").
#include "http_client.hpp"
#include "plain_http.hpp"

#include <util/url.hpp>

#include <algorithm>

namespace dbcheck::probe {

std::vector<HttpReply> get_all(const std::vector<std::string>& urls, const HttpOptions& options,
                               const Deadline& deadline, const EnoughFn& enough) {
  // All or nothing: one call is one opinion, asked the same way of every member.
  const bool plain = !urls.empty() && std::all_of(urls.begin(), urls.end(), [](const auto& u) {
    return util::plain_http_target(u).has_value();
  });
  return plain ? plain_get_all(urls, options, deadline, enough)
               : curl_get_all(urls, options, deadline, enough);
}

} // namespace dbcheck::probe
