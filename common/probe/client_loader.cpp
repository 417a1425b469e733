// The executables' side of the client modules (client_modules.hpp): the probe's libpq,
// libcurl, libevent and OpenSSL wrappers, defined here as calls into dbcheck-pq.so,
// dbcheck-curl.so, dbcheck-event.so and dbcheck-tls.so, each loaded on its first use. A plain
// Redis check, --help and config-check thus never load libpq or libcurl (nor OpenSSL, GSSAPI,
// LDAP... behind them): process start is most of an external check's cost, and it grows with
// every library loaded and relocated. A plain Redis agent never maps them: 4 MiB less
// resident, most of it OpenSSL.
//
// These definitions replace pg_session.cpp, http_client.cpp, plain_http.cpp and tls_stream.cpp
// in dbcheck and dbcheck-agent: the linker takes them from this object first, so it never
// pulls those members out of dbcheck_probe's archive (every symbol they define must be defined
// here too, or the link fails on duplicates), and --as-needed drops libpq, libcurl, libevent
// and libssl (checked after the link).
#include <probe/client_modules.hpp>
#include <util/format.hpp>
#include <util/url.hpp>

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

namespace dbcheck::probe {
namespace {

// A module's table, or why it could not be loaded.
template <class Table>
struct Loaded {
  const Table* table = nullptr;
  std::string error;
};

// <directory of this executable>/../lib/dbcheck/<file>: /usr/lib/dbcheck/ once installed,
// build/lib/dbcheck/ in a build tree. Where /proc is not mounted (a chroot), the directory the
// build installs them in (DBCHECK_MODULE_DIR). Never from the environment or the current
// directory.
std::string module_path(const char* file) {
  std::array<char, PATH_MAX> exe{};
  const ssize_t n = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  if (n <= 0) {
    return std::string{DBCHECK_MODULE_DIR} + "/" + file;
  }
  const std::string self(exe.data(), static_cast<std::size_t>(n));
  return self.substr(0, self.rfind('/')) + "/../lib/dbcheck/" + file;
}

template <class Table>
Loaded<Table> load(const char* file, const char* entry) {
  Loaded<Table> l;
  const std::string path = module_path(file);
  // RTLD_LAZY, as any program linked with libpq gets: the libraries built with BIND_NOW (most of
  // Debian's, the modules too) are bound at load anyway, and the Kerberos ones are not bound
  // eagerly for nothing (about 1,100 symbols; 0.16 ms of a PostgreSQL check's CPU).
  void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    l.error = util::format("cannot load {}", dlerror());
    return l;
  }
  // Never closed: the process exits soon, and an abandoned check step may still be inside it.
  using Entry = const Table* (*)();
  void* symbol = dlsym(handle, entry);
  Entry fn = nullptr;
  static_assert(sizeof fn == sizeof symbol);
  std::memcpy(&fn, &symbol, sizeof fn);
  const Table* table = fn != nullptr ? fn() : nullptr;
  if (table == nullptr || std::strcmp(table->abi, k_module_abi) != 0) {
    l.error = util::format("cannot load {}: not a module of this dbcheck ({})", path,
                           table != nullptr ? table->abi : "no entry point");
    return l;
  }
  l.table = table;
  return l;
}

// The module's table, loaded by whichever thread asks first. Only a success is kept: a failed
// load (EMFILE, ENOMEM, a package upgrade half done) is tried again by the next check, so an
// agent that runs for months does not fail its checks closed until someone restarts it.
template <class Table>
Loaded<Table> cached(const char* file, const char* entry) {
  static std::atomic<const Table*> table{nullptr};
  static std::mutex loading;
  if (const Table* t = table.load(std::memory_order_acquire)) {
    return {t, {}};
  }
  const std::lock_guard lock(loading);
  if (const Table* t = table.load(std::memory_order_acquire)) {
    return {t, {}};
  }
  Loaded<Table> l = load<Table>(file, entry);
  table.store(l.table, std::memory_order_release);
  return l;
}

Loaded<PgModule> pq() {
  return cached<PgModule>("dbcheck-pq.so", "dbcheck_pq_module");
}

Loaded<HttpModule> curl() {
  return cached<HttpModule>("dbcheck-curl.so", "dbcheck_curl_module");
}

Loaded<PlainHttpModule> event() {
  return cached<PlainHttpModule>("dbcheck-event.so", "dbcheck_event_module");
}

Loaded<TlsModule> tls() {
  return cached<TlsModule>("dbcheck-tls.so", "dbcheck_tls_module");
}

// Each URL's reply when a module cannot be loaded: why, handed to `enough` as get_all would.
std::vector<HttpReply> unloaded(const std::vector<std::string>& urls, const std::string& error,
                                const EnoughFn& enough) {
  std::vector<HttpReply> replies(urls.size());
  for (std::size_t i = 0; i < urls.size(); ++i) {
    replies[i].attempt.url = util::redact_url(urls[i]);
    replies[i].attempt.error = error;
    if (enough(i, replies[i])) {
      break;
    }
  }
  return replies;
}

} // namespace

// --- pg_session.cpp ---

// A connection exists only once the module is loaded: it made it.
void PgSession::Closer::operator()(pg_conn* c) const {
  pq().table->finish(c);
}

PgSession::PgSession(pg_conn* conn) : m_conn(conn) {}
PgSession::~PgSession() = default;

tl::expected<PgSession, core::ProbeError> PgSession::connect(const PgTarget& target,
                                                             const Deadline& deadline) {
  const auto m = pq();
  if (m.table == nullptr) {
    return tl::unexpected(core::ProbeError{core::Failure::internal, m.error, {}});
  }
  return m.table->connect(target, deadline);
}

tl::expected<std::vector<PgRow>, core::ProbeError>
PgSession::query(const std::string& sql, const std::vector<std::string>& params,
                 const Deadline& deadline) {
  return pq().table->query(*this, sql, params, deadline);
}

int libpq_version() {
  const auto m = pq();
  return m.table != nullptr ? m.table->libpq_version() : 0;
}

// --- http_client.cpp ---

std::vector<HttpReply> curl_get_all(const std::vector<std::string>& urls,
                                    const HttpOptions& options, const Deadline& deadline,
                                    const EnoughFn& enough) {
  const auto m = curl();
  return m.table != nullptr ? m.table->curl_get_all(urls, options, deadline, enough)
                            : unloaded(urls, m.error, enough);
}

HttpReply post_json(const std::string& url, const std::string& json_body,
                    const std::optional<HttpCredentials>& credentials, const HttpOptions& options,
                    const Deadline& deadline) {
  const auto m = curl();
  if (m.table != nullptr) {
    return m.table->post_json(url, json_body, credentials, options, deadline);
  }
  HttpReply reply;
  reply.attempt.url = util::redact_url(url);
  reply.attempt.error = m.error;
  return reply;
}

std::string libcurl_version() {
  const auto m = curl();
  return m.table != nullptr ? m.table->libcurl_version() : "? (" + m.error + ")";
}

// --- plain_http.cpp ---

std::vector<HttpReply> plain_get_all(const std::vector<std::string>& urls,
                                     const HttpOptions& options, const Deadline& deadline,
                                     const EnoughFn& enough) {
  const auto m = event();
  return m.table != nullptr ? m.table->plain_get_all(urls, options, deadline, enough)
                            : unloaded(urls, m.error, enough);
}

std::string libevent_version() {
  const auto m = event();
  return m.table != nullptr ? m.table->libevent_version() : "? (" + m.error + ")";
}

// --- tls_stream.cpp ---

// A session exists only once the module is loaded: it made it.
void TlsStream::Closer::operator()(ssl_st* s) const {
  tls().table->free(s);
}

TlsStream::TlsStream(ssl_st* ssl) : m_ssl(ssl) {}
TlsStream::~TlsStream() = default;

tl::expected<TlsStream, core::ProbeError> TlsStream::connect(int fd, const std::string& peer_host,
                                                             const config::RedisTls& settings,
                                                             const Deadline& deadline) {
  const auto m = tls();
  if (m.table == nullptr) {
    return tl::unexpected(core::ProbeError{core::Failure::internal, m.error, {}});
  }
  return m.table->connect(fd, peer_host, settings, deadline);
}

tl::expected<void, core::ProbeError> TlsStream::write(std::string_view bytes,
                                                      const Deadline& deadline) {
  return tls().table->write(*this, bytes, deadline);
}

tl::expected<std::size_t, core::ProbeError> TlsStream::read(char* buf, std::size_t size,
                                                            const Deadline& deadline) {
  return tls().table->read(*this, buf, size, deadline);
}

} // namespace dbcheck::probe
