// The only file that includes OpenSSL's headers; built into dbcheck-tls.so.
#include "tls_stream.hpp"

#include "wait_fd.hpp"

#include <util/host_port.hpp>

#include <util/format.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

namespace dbcheck::probe {
namespace {

struct CtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using Ctx = std::unique_ptr<SSL_CTX, CtxFree>;

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

// Marks a session whose server asked for a client certificate when none is configured
// (OpenSSL's client certificate callback, answering "none"). Redis may take the session
// anyway (tls-auth-clients optional) or end it at the first command: only that end says.
const char k_no_certificate_asked = 0;
int no_certificate(SSL* ssl, X509** /*cert*/, EVP_PKEY** /*key*/) {
  SSL_set_ex_data(ssl, 0, const_cast<char*>(&k_no_certificate_asked));
  return 0;
}

// A context for `tls`. The files were checked at load; what fails here is their content.
tl::expected<Ctx, core::ProbeError> make_context(const config::RedisTls& tls) {
  Ctx ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) {
    return tl::make_unexpected(
        error(core::Failure::internal, ssl_reason("cannot allocate a context"), "connecting"));
  }
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  const int ca_ok =
      tls.ca_cert_file
          ? SSL_CTX_load_verify_locations(ctx.get(), tls.ca_cert_file->c_str(), nullptr)
          : SSL_CTX_set_default_verify_paths(ctx.get());
  if (ca_ok != 1) {
    return tl::make_unexpected(error(core::Failure::config,
                                     util::format("cannot use {} as the CA bundle: {}",
                                                 tls.ca_cert_file.value_or("the system's CA store"),
                                                 ssl_reason("unreadable")),
                                     "connecting"));
  }
  if (!tls.cert_file || !tls.key_file) {
    SSL_CTX_set_client_cert_cb(ctx.get(), &no_certificate);
  } else {
    if (SSL_CTX_use_certificate_chain_file(ctx.get(), tls.cert_file->c_str()) != 1) {
      return tl::make_unexpected(error(core::Failure::config,
                                       util::format("cannot use {} as the client certificate: {}",
                                                   *tls.cert_file, ssl_reason("unreadable")),
                                       "connecting"));
    }
    if (SSL_CTX_use_PrivateKey_file(ctx.get(), tls.key_file->c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx.get()) != 1) {
      return tl::make_unexpected(error(core::Failure::config,
                                       util::format("cannot use {} as the client key: {}",
                                                   *tls.key_file, ssl_reason("unreadable")),
                                       "connecting"));
    }
  }
  return ctx;
}

// What identifies a context: its files, each with its inode, size and modification time, so
// that a replaced (rotated) file gets a new context from the next connection on.
std::string context_key(const config::RedisTls& tls) {
  std::string key;
  for (const auto& file : {tls.ca_cert_file, tls.cert_file, tls.key_file}) {
    key += file.value_or("-");
    struct stat st {};
    if (file && ::stat(file->c_str(), &st) == 0) {
      key +=
          util::format(" {} {} {}.{}", st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    }
    key += '\n';
  }
  return key;
}

// The context for `tls`, built once per process and key rather than per connection: in
// OpenSSL 3 a new context fetches every algorithm again, most of a TLS check's CPU. The
// caller owns one reference.
tl::expected<Ctx, core::ProbeError> shared_context(const config::RedisTls& tls) {
  static std::mutex guard;
  // Never freed: at exit an abandoned check step may still be in a handshake.
  static auto& contexts = *new std::map<std::string, Ctx>;
  const std::string key = context_key(tls);
  const std::lock_guard lock(guard); // the other links of a check wait, then share it
  auto it = contexts.find(key);
  if (it == contexts.end()) {
    auto made = make_context(tls);
    if (!made) {
      return made;
    }
    if (contexts.size() >= 16) {
      contexts.clear(); // keys left behind by rotated files
    }
    it = contexts.emplace(key, std::move(*made)).first;
  }
  SSL_CTX_up_ref(it->second.get());
  return Ctx(it->second.get());
}

// Waits for what OpenSSL asked for (SSL_ERROR_WANT_READ or _WRITE) on `fd`.
Wait wait_for(int fd, int ssl_error, const Deadline& deadline) {
  return wait_fd(fd, ssl_error == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, deadline);
}

// A failed SSL_* call on a session, after SSL_get_error gave `ssl_error`.
core::ProbeError io_failure_of(int ssl_error, const char* during) {
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
  return error(core::Failure::network, reason, during);
}

// A failed SSL_* call on `ssl`, after SSL_get_error gave `ssl_error`.
core::ProbeError io_failure(SSL* ssl, int ssl_error, const char* during) {
  core::ProbeError e = io_failure_of(ssl_error, during);
  if (e.kind == core::Failure::network && SSL_get_ex_data(ssl, 0) == &k_no_certificate_asked) {
    // The server's alert may not be read before its reset: name the likely cause.
    e.kind = core::Failure::auth;
    e.detail = util::format("TLS: the server asked for a client certificate and none is "
                           "configured (tls_cert_file, tls_key_file): {}",
                           e.detail);
  }
  return e;
}

} // namespace

void TlsStream::Closer::operator()(ssl_st* s) const {
  SSL_free(s);
}

TlsStream::TlsStream(ssl_st* ssl) : m_ssl(ssl) {}
TlsStream::~TlsStream() = default;

tl::expected<TlsStream, core::ProbeError> TlsStream::connect(int fd, const std::string& peer_host,
                                                             const config::RedisTls& tls,
                                                             const Deadline& deadline) {
  ERR_clear_error();
  auto ctx = shared_context(tls);
  if (!ctx) {
    return tl::make_unexpected(ctx.error());
  }
  SSL* ssl = SSL_new(ctx->get()); // holds its own reference to the context
  if (ssl == nullptr) {
    return tl::make_unexpected(
        error(core::Failure::internal, ssl_reason("cannot allocate a session"), "connecting"));
  }
  TlsStream stream(ssl);
  // Partial writes: write() goes on from where a non-blocking SSL_write stopped.
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  const std::string& name = tls.server_name ? *tls.server_name : peer_host;
  bool named = SSL_set_fd(ssl, fd) == 1;
  if (util::is_ip_literal(name)) {
    named = named && X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) == 1;
  } else {
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
    const int r = SSL_connect(ssl);
    if (r == 1) {
      return stream;
    }
    const int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      const Wait w = wait_for(fd, e, deadline);
      if (w == Wait::timeout) {
        return tl::make_unexpected(core::ProbeError{
            core::Failure::timeout, "timeout: no answer before the deadline (TLS handshake)", ""});
      }
      if (w == Wait::error) {
        return tl::make_unexpected(
            error(core::Failure::network, std::strerror(errno), "TLS handshake"));
      }
      continue;
    }
    if (const long v = SSL_get_verify_result(ssl); v != X509_V_OK) {
      ERR_clear_error();
      return tl::make_unexpected(
          error(core::Failure::auth,
                util::format("the server's certificate does not verify for \"{}\": {}", name,
                            X509_verify_cert_error_string(v)),
                "TLS handshake"));
    }
    return tl::make_unexpected(io_failure(ssl, e, "TLS handshake"));
  }
}

tl::expected<void, core::ProbeError> TlsStream::write(std::string_view bytes,
                                                      const Deadline& deadline) {
  SSL* ssl = m_ssl.get();
  std::size_t done = 0;
  while (done < bytes.size()) {
    ERR_clear_error();
    std::size_t n = 0;
    const int r = SSL_write_ex(ssl, bytes.data() + done, bytes.size() - done, &n);
    if (r == 1) {
      done += n;
      continue;
    }
    const int e = SSL_get_error(ssl, r);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      return tl::make_unexpected(io_failure(ssl, e, "sending"));
    }
    if (const Wait w = wait_for(SSL_get_fd(ssl), e, deadline); w != Wait::ready) {
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
    std::size_t n = 0;
    const int r = SSL_read_ex(ssl, buf, size, &n);
    if (r == 1) {
      return n;
    }
    const int e = SSL_get_error(ssl, r);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      return tl::make_unexpected(io_failure(ssl, e, "reading"));
    }
    const Wait w = wait_for(SSL_get_fd(ssl), e, deadline);
    if (w == Wait::timeout) {
      return 0;
    }
    if (w == Wait::error) {
      return tl::make_unexpected(error(core::Failure::network, std::strerror(errno), "reading"));
    }
  }
}

} // namespace dbcheck::probe
