// OpenSSL contexts for the Redis TLS sessions; with tls_stream.cpp the only files that include
// OpenSSL's headers. Built into dbcheck-tls.so.
#include "tls_context.hpp"

#include <config/client_cert_files.hpp>
#include <util/format.hpp>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace dbcheck::probe {
namespace {

core::ProbeError config_error(const std::string& what) {
  return {core::Failure::config, util::format("TLS: {} (connecting)", what), ""};
}

// The reason of OpenSSL's last queued error (the queue is emptied), or `fallback`.
std::string last_reason(const char* fallback) {
  unsigned long last = 0;
  while (const unsigned long e = ERR_get_error()) {
    last = e;
  }
  const char* reason = last != 0 ? ERR_reason_error_string(last) : nullptr;
  return reason != nullptr ? reason : fallback;
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using Bio = std::unique_ptr<BIO, BioFree>;

Bio memory_bio(const std::string& bytes) {
  return Bio(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())));
}

// What a context is made of, as read from the files now.
struct Material {
  std::string ca; // empty: the system's CA store
  std::string cert;
  config::Secret key;
};

tl::expected<Material, core::ProbeError> read_material(const config::RedisTls& tls) {
  Material m;
  if (tls.ca_cert_file) {
    auto ca = config::read_certificate_file(*tls.ca_cert_file, "CA bundle");
    if (!ca) {
      return tl::make_unexpected(config_error(ca.error()));
    }
    m.ca = std::move(*ca);
  }
  if (tls.cert_file && tls.key_file) {
    auto cert = config::read_certificate_file(*tls.cert_file, "client certificate");
    if (!cert) {
      return tl::make_unexpected(config_error(cert.error()));
    }
    auto key = config::read_key_file(*tls.key_file);
    if (!key) {
      return tl::make_unexpected(config_error(key.error()));
    }
    m.cert = std::move(*cert);
    m.key = std::move(*key);
  }
  return m;
}

// The identity of a context: a SHA-256 over length-prefixed fields, so no two materials (nor
// the key's bytes themselves) are ever kept as a map key.
std::string digest_of(const config::RedisTls& tls, const Material& m) {
  std::string fields;
  for (const std::string* f : {&m.ca, &m.cert, &m.key.reveal()}) {
    fields += util::format("{}:", f->size());
    fields += *f;
  }
  fields += tls.ca_cert_file ? "ca-file" : "system-store";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(fields.data(), fields.size(), md, &len, EVP_sha256(), nullptr);
  OPENSSL_cleanse(fields.data(), fields.size());
  return {reinterpret_cast<const char*>(md), len};
}

int no_passphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) {
  return 0; // an encrypted key fails, never prompts on a terminal
}

// The ex_data slot marking a session whose server asked for a client certificate.
int request_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

const char k_requested = 0;

// OpenSSL's client certificate callback when none is configured: answer "none", and mark the
// session. Redis may take it anyway (tls-auth-clients optional) or end it at the first
// command; only that end says which.
int note_request(SSL* ssl, X509** /*cert*/, EVP_PKEY** /*key*/) {
  SSL_set_ex_data(ssl, request_index(), const_cast<char*>(&k_requested));
  return 0;
}

// The trust anchors of `tls` put into `ctx`, or why they cannot be.
std::optional<core::ProbeError> trust(SSL_CTX* ctx, const config::RedisTls& tls,
                                      const Material& m) {
  if (!tls.ca_cert_file) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      return config_error(
          util::format("cannot use the system's CA store: {}", last_reason("unreadable")));
    }
    return std::nullopt;
  }
  Bio bio = memory_bio(m.ca);
  STACK_OF(X509_INFO)* infos = PEM_X509_INFO_read_bio(bio.get(), nullptr, no_passphrase, nullptr);
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int added = 0;
  for (int i = 0; infos != nullptr && i < sk_X509_INFO_num(infos); ++i) {
    X509_INFO* info = sk_X509_INFO_value(infos, i);
    if (info->x509 != nullptr && X509_STORE_add_cert(store, info->x509) == 1) {
      ++added;
    }
  }
  sk_X509_INFO_pop_free(infos, X509_INFO_free);
  if (added == 0) {
    return config_error(util::format("no certificate in the CA bundle {}: {}", *tls.ca_cert_file,
                                     last_reason("not PEM")));
  }
  return std::nullopt;
}

// The client certificate (with its chain) and key of `tls` put into `ctx`, or why not.
std::optional<core::ProbeError> identity(SSL_CTX* ctx, const config::RedisTls& tls,
                                         const Material& m) {
  Bio certs = memory_bio(m.cert);
  X509* leaf = PEM_read_bio_X509(certs.get(), nullptr, no_passphrase, nullptr);
  const bool leaf_ok = leaf != nullptr && SSL_CTX_use_certificate(ctx, leaf) == 1;
  X509_free(leaf);
  if (!leaf_ok) {
    return config_error(util::format("cannot use {} as the client certificate: {}", *tls.cert_file,
                                     last_reason("not PEM")));
  }
  while (X509* extra = PEM_read_bio_X509(certs.get(), nullptr, no_passphrase, nullptr)) {
    // SSL_CTX_add0_chain_cert without its macro's C cast; takes `extra` when it succeeds.
    if (SSL_CTX_ctrl(ctx, SSL_CTRL_CHAIN_CERT, 0, extra) != 1) {
      X509_free(extra);
    }
  }
  ERR_clear_error(); // the end of the chain reads as "no start line"
  Bio key_bio = memory_bio(m.key.reveal());
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_passphrase, nullptr);
  const bool key_ok = key != nullptr && SSL_CTX_use_PrivateKey(ctx, key) == 1 &&
                      SSL_CTX_check_private_key(ctx) == 1;
  EVP_PKEY_free(key);
  if (!key_ok) {
    return config_error(util::format("cannot use {} as the client key for {}: {}", *tls.key_file,
                                     *tls.cert_file, last_reason("not a PEM private key")));
  }
  return std::nullopt;
}

tl::expected<SslCtx, core::ProbeError> make_context(const config::RedisTls& tls,
                                                    const Material& m) {
  SslCtx ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) {
    return tl::make_unexpected(core::ProbeError{core::Failure::internal,
                                                "TLS: cannot allocate a context (connecting)", ""});
  }
  // After the system configuration was applied: it cannot lower the floor.
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  // Nothing Redis does needs renegotiation or resumption; each costs the peer nothing and us a
  // handshake's CPU.
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_default_passwd_cb(ctx.get(), no_passphrase);
  if (auto bad = trust(ctx.get(), tls, m)) {
    return tl::make_unexpected(*bad);
  }
  if (m.cert.empty()) {
    SSL_CTX_set_client_cert_cb(ctx.get(), &note_request);
  } else if (auto bad = identity(ctx.get(), tls, m)) {
    return tl::make_unexpected(*bad);
  }
  return ctx;
}

} // namespace

void SslCtxFree::operator()(ssl_ctx_st* c) const {
  SSL_CTX_free(c);
}

tl::expected<SslCtx, core::ProbeError> tls_context(const config::RedisTls& tls) {
  ERR_clear_error();
  auto material = read_material(tls);
  if (!material) {
    return tl::make_unexpected(material.error());
  }
  const std::string key = digest_of(tls, *material);
  static std::mutex guard;
  // Never destroyed: in unit tests and fuzzers that return from main, its destructor would run
  // after OpenSSL's own exit-time cleanup (registered by the first SSL_CTX_new, after this map).
  static auto& contexts = *new std::map<std::string, SslCtx>;
  const auto shared = [&]() -> SslCtx {
    const std::lock_guard lock(guard);
    auto it = contexts.find(key);
    if (it == contexts.end()) {
      return SslCtx();
    }
    SSL_CTX_up_ref(it->second.get());
    return SslCtx(it->second.get());
  };
  if (SslCtx ctx = shared()) {
    return ctx;
  }
  // In OpenSSL 3 a new context fetches every algorithm again, most of a TLS check's CPU: build
  // it once per material, outside the lock.
  auto made = make_context(tls, *material);
  if (!made) {
    return made;
  }
  const std::lock_guard lock(guard);
  if (contexts.size() >= 16) {
    contexts.clear(); // materials left behind by rotated files
  }
  auto it = contexts.emplace(key, std::move(*made)).first;
  SSL_CTX_up_ref(it->second.get()); // the one in the map, whichever thread built it
  return SslCtx(it->second.get());
}

bool certificate_requested(ssl_st* ssl) {
  return SSL_get_ex_data(ssl, request_index()) == &k_requested;
}

void forget_certificate_request(ssl_st* ssl) {
  SSL_set_ex_data(ssl, request_index(), nullptr);
}

} // namespace dbcheck::probe
