#pragma once
// Parallel HTTP GETs over plain http:// to IP address literals (libevent's evhttp): what the
// Patroni opinion asks on every check, without loading libcurl and the thirty libraries behind
// it (OpenSSL's initialisation, SSH, LDAP, HTTP/2...). get_all routes here (http_route.cpp).

#include "http_client.hpp"

#include <string>
#include <vector>

namespace dbcheck::probe {

// --- Interface ---

// get_all's contract (http_client.hpp) for URLs that util::plain_http_target accepts; any other
// URL gets an error reply, unasked. Never throws; returns by the deadline (libevent's precise
// timer: within a millisecond on an idle machine), whatever the servers do. Memory per GET is
// bounded by options.max_body and 192 KiB of headers and unread bytes.
std::vector<HttpReply> plain_get_all(const std::vector<std::string>& urls,
                                     const HttpOptions& options, const Deadline& deadline,
                                     const EnoughFn& enough);

// The libevent actually loaded ("2.1.12-stable"), for --version.
std::string libevent_version();

} // namespace dbcheck::probe
