#pragma once
// The OpenSSL contexts TLS sessions are made from: the trust anchors, the client certificate
// and key of one RedisTls, read from their files under the same rules as at load and shared
// per process by what the files hold. Built into dbcheck-tls.so with tls_stream.cpp.

#include <config/config.hpp>
#include <core/probe_error.hpp>

#include <tl/expected.hpp>

#include <memory>

struct ssl_ctx_st; // OpenSSL's SSL_CTX
struct ssl_st;     // OpenSSL's SSL

namespace dbcheck::probe {

// --- Interface ---

// Frees one reference to a context.
struct SslCtxFree {
  void operator()(ssl_ctx_st* c) const;
};
using SslCtx = std::unique_ptr<ssl_ctx_st, SslCtxFree>;

// A context for `tls` (the caller owns one reference): TLS 1.2 or later, the peer verified,
// no renegotiation. Its files are read now (so a rotated file counts from the next
// connection on): the CA bundle and certificate as regular files of at most 1 MiB, the key
// under the password-file rules and unencrypted. A file that cannot be used is Failure::config
// naming it. Built outside any lock: a slow file delays only its own connection.
tl::expected<SslCtx, core::ProbeError> tls_context(const config::RedisTls& tls);

// True when the server of `ssl` asked for a client certificate and none is configured, and
// the session has not yet been accepted (see forget_certificate_request).
bool certificate_requested(ssl_st* ssl);

// The server took the session (application data came): a later failure is not its refusal.
void forget_certificate_request(ssl_st* ssl);

} // namespace dbcheck::probe
