// Names the client libraries' versions; libpq, libcurl and libevent are asked by their wrappers
// (pg_session.cpp, http_client.cpp, plain_http.cpp), hiredis has only its version macros.
#include "library_versions.hpp"

#include "http_client.hpp"
#include "pg_session.hpp"
#include "plain_http.hpp"

#include <util/format.hpp>

#include <hiredis/hiredis.h>

namespace dbcheck::probe {

std::string library_versions() {
  const int pq = libpq_version(); // e.g. 150018; 0 when it cannot be loaded
  return util::format("libpq {}, hiredis {}.{}.{}, libcurl {}, libevent {}",
                      pq > 0 ? util::format("{}.{}", pq / 10000, pq % 10000) : "?", HIREDIS_MAJOR,
                      HIREDIS_MINOR, HIREDIS_PATCH, libcurl_version(), libevent_version());
}

std::string version_banner(const std::string& program) {
  return program + " " + DBCHECK_VERSION + " (" + library_versions() + ")";
}

} // namespace dbcheck::probe
