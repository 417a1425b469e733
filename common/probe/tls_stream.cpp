// With tls_context.cpp the only files that include OpenSSL's headers; built into dbcheck-tls.so.
#include "tls_stream.hpp"

#include "tls_context.hpp"
#include "wait_fd.hpp"

#include <util/format.hpp>
#include <util/host_port.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <poll.h>

#include <cerrno>
#include <cstring>

namespace dbcheck::probe {
namespace {

// The reason of OpenSSL's last queued error (the queue is emptied), or `fallback`; `code`
// receives its reason code (0: none).
std::string ssl_reason(const char* fallback, int* code = nullptr) {
  unsigned long last = 0;
  while (const unsigned long e = ERR_get_error()) {
    last = e;
  }
  if (code != nullptr) {
    *code = last != 0 ? ERR_GET_REASON(last) : 0;
  }
  const char* reason = last != 0 ? ERR_reason_error_string(last) : nullptr;
  return reason != nullptr ? reason : fallback;
}

// True for the alerts a server sends when it refuses our certificate (none, another CA,
// expired...): a trust problem between the two ends, as a failed verification is.
bool refused_our_certificate(int reason) {
  switch (reason) {
  case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
  case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
  case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
  case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
  case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
  case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
  case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
  case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
    return true;
  default:
    return false;
  }
}

core::ProbeError error(core::Failure kind, const std::string& what, const char* during) {
  return {kind, util::format("TLS: {} ({})", what, during), ""};
}

// Waits for what OpenSSL asked for (SSL_ERROR_WANT_READ or _WRITE) on `fd`.
Wait wait_for(int fd, int ssl_error, const Deadline& deadline) {
  return wait_fd(fd, ssl_error == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, deadline);
}

// True for the handshake errors of a port that does not speak TLS (a plain Redis port).
bool not_tls(int reason) {
#ifdef SSL_R_RECORD_LAYER_FAILURE // OpenSSL 3.2 and later
  if (reason == SSL_R_RECORD_LAYER_FAILURE) {
    return true;
  }
#endif
  return reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG;
}

// True when the two ends share no TLS version or cipher.
bool nothing_in_common(int reason) {
  return reason == SSL_R_UNSUPPORTED_PROTOCOL || reason == SSL_R_TLSV1_ALERT_PROTOCOL_VERSION ||
         reason == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE || reason == SSL_R_NO_PROTOCOLS_AVAILABLE;
}

// A failed SSL_* call on a session, after SSL_get_error gave `ssl_error`; `handshake` while
// connecting. errno was cleared before the call, so a value here is the call's own.
core::ProbeError io_failure_of(int ssl_error, bool handshake, const char* during) {
  if (ssl_error == SSL_ERROR_ZERO_RETURN) {
    return {core::Failure::network, util::format("Server closed the connection ({})", during), ""};
  }
  if (ssl_error == SSL_ERROR_SYSCALL) {
    const int saved = errno;
    const std::string reason = ssl_reason("");
    return {core::Failure::network,
            util::format("{} ({})",
                         !reason.empty() ? "TLS: " + reason
                         : saved != 0    ? std::string(std::strerror(saved))
                                         : std::string("Server closed the connection"),
                         during),
            ""};
  }
  int code = 0;
  const std::string reason = ssl_reason("session failed", &code);
  if (refused_our_certificate(code)) {
    return error(core::Failure::auth, "the server refused our certificate: " + reason, during);
  }
  if (handshake && not_tls(code)) {
    return error(core::Failure::protocol,
                 "the server does not speak TLS on this port (is it Redis's tls-port?): " + reason,
                 during);
  }
  if (handshake && nothing_in_common(code)) {
    return error(core::Failure::config,
                 "no TLS version or cipher in common (dbcheck needs TLS 1.2 or later): " + reason,
                 during);
  }
  return error(core::Failure::network, reason, during);
}

// True for an end of the session without a reason: end of file or a reset.
bool ended_without_reason(const core::ProbeError& e, int ssl_error) {
  return e.kind == core::Failure::network &&
         (ssl_error == SSL_ERROR_SYSCALL || ssl_error == SSL_ERROR_ZERO_RETURN ||
          e.detail.find("unexpected eof") != std::string::npos);
}

} // namespace

void TlsStream::Closer::operator()(ssl_st* s) const {
  // One non-blocking close_notify, so the server logs an orderly end; never after a fatal
  // error (fail() marks the session shut, as OpenSSL requires).
  if (SSL_is_init_finished(s) == 1 && (SSL_get_shutdown(s) & SSL_SENT_SHUTDOWN) == 0) {
    SSL_shutdown(s);
  }
  SSL_free(s);
}

TlsStream::TlsStream(ssl_st* ssl) : m_ssl(ssl) {}
TlsStream::~TlsStream() = default;

void TlsStream::fail() {
  m_failed = true;
  SSL_set_shutdown(m_ssl.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
}

core::ProbeError TlsStream::failure(int ssl_error, bool handshake, const char* during) {
  fail();
  core::ProbeError e = io_failure_of(ssl_error, handshake, during);
  SSL* ssl = m_ssl.get();
  // A server that asked for a certificate we do not have may end the session without a
  // readable alert: name the likely cause, as long as it has not yet accepted us.
  if (certificate_requested(ssl) && ended_without_reason(e, ssl_error)) {
    e.kind = core::Failure::auth;
    e.detail = util::format("TLS: the server asked for a client certificate and none is "
                            "configured (tls_cert_file, tls_key_file): {}",
                            e.detail);
  }
  return e;
}

tl::expected<TlsStream, core::ProbeError> TlsStream::connect(int fd, const std::string& peer_host,
                                                             const config::RedisTls& tls,
                                                             const Deadline& deadline) {
  const std::string& name = tls.server_name ? *tls.server_name : peer_host;
  // An empty name would switch host checking off in SSL_set1_host; a NUL would cut it short.
  if (name.empty() || name.find('\0') != std::string::npos) {
    return tl::make_unexpected(error(core::Failure::config,
                                     "no valid name to verify the server's certificate against",
                                     "connecting"));
  }
  ERR_clear_error();
  auto ctx = tls_context(tls);
  if (!ctx) {
    return tl::make_unexpected(ctx.error());
  }
  SSL* ssl = SSL_new(ctx->get()); // holds its own reference to the context
  if (ssl == nullptr) {
    return tl::make_unexpected(
        error(core::Failure::internal, ssl_reason("cannot allocate a session"), "connecting"));
  }
  TlsStream stream(ssl);
  // Partial writes: write() goes on from where a non-blocking SSL_write stopped. No automatic
  // retry: OpenSSL would otherwise loop inside one call over records that carry no data (tickets,
  // key updates) for as long as the peer sends them, never looking at the deadline.
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_clear_mode(ssl, SSL_MODE_AUTO_RETRY);
  bool named = SSL_set_fd(ssl, fd) == 1;
  if (util::is_ip_literal(name)) {
    named = named && X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) == 1;
  } else {
    // No partial wildcards (redis*.example.com) and no fallback to the subject's CN.
    SSL_set_hostflags(ssl,
                      X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
    // SSL_set_tlsext_host_name, without its macro's C cast.
    named = named &&
            SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                     const_cast<char*>(name.c_str())) == 1 &&
            SSL_set1_host(ssl, name.c_str()) == 1;
  }
  if (!named) {
    return tl::make_unexpected(error(
        core::Failure::config,
        util::format("cannot verify the name \"{}\": {}", name, ssl_reason("not a valid name")),
        "connecting"));
  }
  for (;;) {
    errno = 0;
    const int r = SSL_connect(ssl);
    if (r == 1) {
      return stream;
    }
    const int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      const Wait w = wait_for(fd, e, deadline);
      if (w == Wait::timeout) {
        stream.fail();
        return tl::make_unexpected(core::ProbeError{
            core::Failure::timeout, "timeout: no answer before the deadline (TLS handshake)", ""});
      }
      if (w == Wait::error) {
        stream.fail();
        return tl::make_unexpected(
            error(core::Failure::network, std::strerror(errno), "TLS handshake"));
      }
      continue;
    }
    if (const long v = SSL_get_verify_result(ssl); v != X509_V_OK) {
      ERR_clear_error();
      stream.fail();
      const bool name_wrong =
          v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH;
      return tl::make_unexpected(
          error(core::Failure::auth,
                util::format("cannot trust the server's certificate for \"{}\": {}{}", name,
                             X509_verify_cert_error_string(v),
                             name_wrong ? " (set tls_server_name to a name it carries, or give the "
                                          "certificates IP SANs: Sentinels hand out addresses)"
                                        : ""),
                "TLS handshake"));
    }
    return tl::make_unexpected(stream.failure(e, true, "TLS handshake"));
  }
}

tl::expected<void, core::ProbeError> TlsStream::write(std::string_view bytes,
                                                      const Deadline& deadline) {
  SSL* ssl = m_ssl.get();
  std::size_t done = 0;
  while (done < bytes.size()) {
    ERR_clear_error();
    errno = 0;
    std::size_t n = 0;
    const int r = SSL_write_ex(ssl, bytes.data() + done, bytes.size() - done, &n);
    if (r == 1) {
      done += n;
      continue;
    }
    const int e = SSL_get_error(ssl, r);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      return tl::make_unexpected(failure(e, false, "sending"));
    }
    if (const Wait w = wait_for(SSL_get_fd(ssl), e, deadline); w != Wait::ready) {
      fail(); // a record may be half written: the session cannot go on
      return tl::make_unexpected(
          w == Wait::timeout
              ? core::ProbeError{core::Failure::timeout,
                                 "timeout: no answer before the deadline (sending)", ""}
              : error(core::Failure::network, std::strerror(errno), "sending"));
    }
  }
  return {};
}

tl::expected<std::size_t, core::ProbeError> TlsStream::read(char* buf, std::size_t size,
                                                            const Deadline& deadline) {
  SSL* ssl = m_ssl.get();
  for (;;) {
    // Read before polling: plaintext OpenSSL already holds never wakes poll().
    ERR_clear_error();
    errno = 0;
    std::size_t n = 0;
    const int r = SSL_read_ex(ssl, buf, size, &n);
    if (r == 1) {
      forget_certificate_request(ssl); // the server took the session
      return n;
    }
    const int e = SSL_get_error(ssl, r);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      return tl::make_unexpected(failure(e, false, "reading"));
    }
    // wait_fd looks at the deadline first: a peer sending records without data cannot keep
    // this loop past it.
    const Wait w = wait_for(SSL_get_fd(ssl), e, deadline);
    if (w == Wait::timeout) {
      return 0;
    }
    if (w == Wait::error) {
      fail();
      return tl::make_unexpected(error(core::Failure::network, std::strerror(errno), "reading"));
    }
  }
}

} // namespace dbcheck::probe
