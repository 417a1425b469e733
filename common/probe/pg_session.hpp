#pragma once
// One PostgreSQL connection whose every step honours a deadline (libpq's async API + poll()).

#include "deadline.hpp"

#include <core/pg_rows.hpp>
#include <core/probe_error.hpp>
#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

struct pg_conn; // libpq's PGconn, kept out of this header

namespace dbcheck::probe {

// Where and as whom to connect; every libpq setting dbcheck relies on is named here.
struct PgTarget {
  util::HostPort address;
  std::string dbname;
  std::string user;
  std::string password; // empty: none sent
  std::string sslmode = "prefer";
  std::optional<std::string> sslrootcert;
  std::optional<std::string> sslcert; // client certificate and key paths (both or neither)
  std::optional<std::string> sslkey;
};

using PgRow = core::PgRow; // text values, nullopt for NULL

// An open connection (RAII: PQfinish on destruction); every call bounded by a Deadline.
class PgSession {
public:
  // Connects within `deadline`; the server is also told to cancel any statement that outlives
  // it (statement_timeout), so an abandoned query does not linger. Nothing is read from the
  // environment, ~/.pgpass or service files.
  static tl::expected<PgSession, core::ProbeError> connect(const PgTarget& target,
                                                           const Deadline& deadline);

  // Runs one statement with text parameters and returns its rows, or the classified error.
  tl::expected<std::vector<PgRow>, core::ProbeError>
  query(const std::string& sql, const std::vector<std::string>& params, const Deadline& deadline);

  PgSession(PgSession&&) noexcept = default;
  PgSession& operator=(PgSession&&) noexcept = default;
  ~PgSession();

  // Closes a connection (PQfinish); public for the module table (client_modules.hpp).
  struct Closer {
    void operator()(pg_conn* c) const;
  };

private:
  explicit PgSession(pg_conn* conn);
  std::unique_ptr<pg_conn, Closer> m_conn;
};

// The libpq actually loaded, as PQlibVersion() says (e.g. 150018), for --version.
int libpq_version();

} // namespace dbcheck::probe
