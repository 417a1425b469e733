// dbcheck-curl.so: the entry point of the libcurl module (client_modules.hpp); http_client.cpp
// comes with it from the probe's library.
#include "client_modules.hpp"

namespace dbcheck::probe {
namespace {

const HttpModule k_module{k_module_abi, &curl_get_all, &post_json, &libcurl_version};

} // namespace
} // namespace dbcheck::probe

extern "C" const dbcheck::probe::HttpModule* dbcheck_curl_module() {
  return &dbcheck::probe::k_module;
}
