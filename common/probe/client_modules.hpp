#pragma once
// The client libraries, as modules dbcheck and dbcheck-agent dlopen only when a check needs
// them (client_loader.cpp; docs/architecture.md): libpq and libcurl are expensive to load
// (OpenSSL, GSSAPI, LDAP, GnuTLS... behind them), libevent is cheap but only PostgreSQL checks
// use it. Each module is the probe's own wrapper (pg_session.cpp, http_client.cpp,
// plain_http.cpp) built as a shared object that exports one function, the table below.
// Sanitizer and fuzz builds link the wrappers directly.

#include "http_client.hpp"
#include "pg_session.hpp"
#include "plain_http.hpp"
#include "tls_stream.hpp"

namespace dbcheck::probe {

// A module and the binary loading it must come from the same build: the tables pass C++
// objects (std::string, tl::expected) by reference.
inline constexpr const char* k_module_abi = "dbcheck " DBCHECK_VERSION " modules 3";

// dbcheck-pq.so: PgSession (pg_session.cpp).
struct PgModule {
  const char* abi;
  tl::expected<PgSession, core::ProbeError> (*connect)(const PgTarget&, const Deadline&);
  tl::expected<std::vector<PgRow>, core::ProbeError> (*query)(PgSession&, const std::string&,
                                                              const std::vector<std::string>&,
                                                              const Deadline&);
  void (*finish)(pg_conn*);
  int (*libpq_version)();
};

// dbcheck-curl.so: curl_get_all and post_json (http_client.cpp).
struct HttpModule {
  const char* abi;
  std::vector<HttpReply> (*curl_get_all)(const std::vector<std::string>&, const HttpOptions&,
                                         const Deadline&, const EnoughFn&);
  HttpReply (*post_json)(const std::string&, const std::string&,
                         const std::optional<HttpCredentials>&, const HttpOptions&,
                         const Deadline&);
  std::string (*libcurl_version)();
};

// dbcheck-event.so: plain_get_all (plain_http.cpp).
struct PlainHttpModule {
  const char* abi;
  std::vector<HttpReply> (*plain_get_all)(const std::vector<std::string>&, const HttpOptions&,
                                          const Deadline&, const EnoughFn&);
  std::string (*libevent_version)();
};

// dbcheck-tls.so: TlsStream (tls_stream.cpp), OpenSSL for Redis and Sentinel links.
struct TlsModule {
  const char* abi;
  tl::expected<TlsStream, core::ProbeError> (*connect)(int, const std::string&,
                                                       const config::RedisTls&, const Deadline&);
  tl::expected<void, core::ProbeError> (*write)(TlsStream&, std::string_view, const Deadline&);
  tl::expected<std::size_t, core::ProbeError> (*read)(TlsStream&, char*, std::size_t,
                                                      const Deadline&);
  void (*free)(ssl_st*);
};

} // namespace dbcheck::probe

// The one symbol each module exports.
extern "C" const dbcheck::probe::PgModule* dbcheck_pq_module();
extern "C" const dbcheck::probe::HttpModule* dbcheck_curl_module();
extern "C" const dbcheck::probe::PlainHttpModule* dbcheck_event_module();
extern "C" const dbcheck::probe::TlsModule* dbcheck_tls_module();
