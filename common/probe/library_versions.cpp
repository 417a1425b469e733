// Includes the three client headers only to ask for their versions.
#include "library_versions.hpp"

#include <curl/curl.h>
#include <fmt/format.h>
#include <libpq-fe.h>

#include <hiredis/hiredis.h>

namespace dbcheck::probe {

std::string library_versions() {
  const int pq = PQlibVersion(); // e.g. 150018
  const curl_version_info_data* curl = curl_version_info(CURLVERSION_NOW);
  return fmt::format("libpq {}.{}, hiredis {}.{}.{}, libcurl {}", pq / 10000, pq % 10000,
                     HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH,
                     curl != nullptr ? curl->version : "?");
}

std::string version_banner(const std::string& program) {
  return program + " " + DBCHECK_VERSION + " (" + library_versions() + ")";
}

} // namespace dbcheck::probe
