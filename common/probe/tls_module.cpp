// dbcheck-tls.so: the entry point of the OpenSSL module (client_modules.hpp); tls_stream.cpp
// comes with it from the probe's library.
#include "client_modules.hpp"

namespace dbcheck::probe {
namespace {

const TlsModule k_module{
    k_module_abi,
    &TlsStream::connect,
    [](TlsStream& s, std::string_view bytes, const Deadline& deadline) {
      return s.write(bytes, deadline);
    },
    [](TlsStream& s, char* buf, std::size_t size, const Deadline& deadline) {
      return s.read(buf, size, deadline);
    },
    [](ssl_st* s) { TlsStream::Closer{}(s); },
};

} // namespace
} // namespace dbcheck::probe

extern "C" const dbcheck::probe::TlsModule* dbcheck_tls_module() {
  return &dbcheck::probe::k_module;
}
