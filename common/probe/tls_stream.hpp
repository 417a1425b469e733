#pragma once
// A TLS session over a connected non-blocking socket, driven against a Deadline: how a
// RedisLink talks to a data node or a Sentinel with tls = true. OpenSSL is used directly, not
// through hiredis_ssl (absent from Debian 12's hiredis 0.14): the link already reads the socket
// itself so that ReplyBounds sees every byte, and it writes the commands hiredis formats.
// Built into dbcheck-tls.so, loaded on the first TLS connect (client_modules.hpp).

#include "deadline.hpp"

#include <config/config.hpp>
#include <core/probe_error.hpp>

#include <tl/expected.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

struct ssl_st; // OpenSSL's SSL, kept out of this header

namespace dbcheck::probe {

// One TLS session (RAII: SSL_free on destruction; the socket stays its owner's).
class TlsStream {
public:
  // --- Interface ---

  // Completes a TLS handshake on `fd` within `deadline`, verifying the peer's certificate
  // against `tls` (its CA file, or the system's store) and the name it must carry
  // (tls.server_name, else `peer_host`, the address connected to; sent as SNI when a name).
  // A certificate that does not verify is Failure::auth, with OpenSSL's reason; a port that
  // does not speak TLS is Failure::protocol; no version or cipher in common, Failure::config.
  static tl::expected<TlsStream, core::ProbeError> connect(int fd, const std::string& peer_host,
                                                           const config::RedisTls& tls,
                                                           const Deadline& deadline);

  // Writes all of `bytes` within `deadline`.
  tl::expected<void, core::ProbeError> write(std::string_view bytes, const Deadline& deadline);

  // Reads at most `size` bytes into `buf`, waiting for some until `deadline`; 0 when none came
  // before it (not an error). A closed session is an error.
  tl::expected<std::size_t, core::ProbeError> read(char* buf, std::size_t size,
                                                   const Deadline& deadline);

  // False once the session met a fatal error or a deadline mid-record: it must not be reused.
  bool usable() const { return m_ssl && !m_failed; }

  TlsStream(TlsStream&&) noexcept = default;
  TlsStream& operator=(TlsStream&&) noexcept = default;
  ~TlsStream();

  // Frees a session (what the destructor does; the module's table calls it).
  struct Closer {
    void operator()(ssl_st* s) const;
  };

private:
  explicit TlsStream(ssl_st* ssl);
  // The error for a failed SSL_* call (SSL_get_error gave `ssl_error`); marks the session
  // unusable.
  core::ProbeError failure(int ssl_error, bool handshake, const char* during);
  // Marks the session unusable, and shut so that closing it sends nothing more.
  void fail();
  std::unique_ptr<ssl_st, Closer> m_ssl;
  bool m_failed = false;
};

} // namespace dbcheck::probe
