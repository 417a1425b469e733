// dbcheck-event.so: the entry point of the libevent module (client_modules.hpp); plain_http.cpp
// comes with it from the probe's library.
#include "client_modules.hpp"

namespace dbcheck::probe {
namespace {

const PlainHttpModule k_module{k_module_abi, &plain_get_all, &libevent_version};

} // namespace
} // namespace dbcheck::probe

extern "C" const dbcheck::probe::PlainHttpModule* dbcheck_event_module() {
  return &dbcheck::probe::k_module;
}
