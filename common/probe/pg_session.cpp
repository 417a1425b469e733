// The only file that includes libpq-fe.h.
#include "pg_session.hpp"

#include "wait_fd.hpp"

#include <core/pg_errors.hpp>
#include <util/format.hpp>

#include <libpq-fe.h>

#include <poll.h>

#include <cerrno>
#include <cstring>

namespace dbcheck::probe {
namespace {

// A path that cannot exist: libpq reads it as "no such file", i.e. none.
constexpr const char* k_no_file = "/nonexistent/dbcheck/none";

// A failed wait as a probe error: the deadline passing, or poll() itself failing.
core::ProbeError wait_error(Wait w, const char* during) {
  if (w == Wait::error) {
    return {core::Failure::network,
            util::format("poll failed: {} ({})", std::strerror(errno), during), ""};
  }
  return {core::Failure::timeout,
          util::format("timeout: no answer before the deadline ({})", during), ""};
}

} // namespace

void PgSession::Closer::operator()(pg_conn* c) const {
  PQfinish(c);
}

int libpq_version() {
  return PQlibVersion();
}

PgSession::PgSession(pg_conn* conn) : m_conn(conn) {}
PgSession::~PgSession() = default;

tl::expected<PgSession, core::ProbeError> PgSession::connect(const PgTarget& t,
                                                             const Deadline& deadline) {
  const std::string port = std::to_string(t.address.port);
  // Ask the server to stop any statement that would outlive our deadline.
  const int budget_ms = std::max(1, deadline.remaining_ms());
  const std::string options = util::format("-c statement_timeout={}", budget_ms);
  const std::string connect_timeout = std::to_string(std::max(2, budget_ms / 1000 + 1));
  const bool numeric = util::is_ip_literal(t.address.host);

  std::vector<const char*> keys;
  std::vector<const char*> values;
  const auto set = [&](const char* k, const std::string& v) {
    keys.push_back(k);
    values.push_back(v.c_str());
  };
  const auto set_literal = [&](const char* k, const char* v) {
    keys.push_back(k);
    values.push_back(v);
  };
  // hostaddr (no DNS) keeps PQconnectPoll non-blocking; a name goes through host= instead.
  // host= is set as well for an address: verify-full checks the server's certificate against
  // host, and without it libpq refuses ("host name must be specified for a verified SSL
  // connection"); with hostaddr present, libpq resolves nothing.
  if (numeric) {
    set("hostaddr", t.address.host);
  }
  set("host", t.address.host);
  set("port", port);
  set("dbname", t.dbname);
  set("user", t.user);
  if (!t.password.empty()) {
    set("password", t.password);
  }
  // Every file libpq would otherwise look up under the user's home directory is named, so no
  // passwd lookup (NSS may block) and no stray ~/.postgresql file changes TLS behaviour. A path
  // that does not exist means "none" to libpq for certificates, keys and CRLs; a configured
  // client certificate and key were checked at load (config/client_cert_files.hpp).
  const auto set_file = [&](const char* k, const std::optional<std::string>& file) {
    if (file) {
      set(k, *file);
    } else {
      set_literal(k, k_no_file);
    }
  };
  set_literal("passfile", k_no_file);
  set_file("sslcert", t.sslcert);
  set_file("sslkey", t.sslkey);
  set_literal("sslcrl", k_no_file);
  set_file("sslrootcert", t.sslrootcert);
  set_literal("gssencmode", "disable"); // no Kerberos round trips on the check path
  set("sslmode", t.sslmode);
  set_literal("application_name", "dbcheck");
  set_literal("target_session_attrs", "any");
  set("connect_timeout", connect_timeout); // unused by PQconnectPoll; a sane value regardless
  set("options", options);
  keys.push_back(nullptr);
  values.push_back(nullptr);

  PGconn* raw = PQconnectStartParams(keys.data(), values.data(), 0);
  if (raw == nullptr) {
    return tl::make_unexpected(
        core::ProbeError{core::Failure::network, "libpq could not allocate a connection", ""});
  }
  PgSession session(raw);
  if (PQstatus(raw) == CONNECTION_BAD) {
    return tl::make_unexpected(core::classify_pg_connect_error(PQerrorMessage(raw)));
  }
  PostgresPollingStatusType st = PGRES_POLLING_WRITING;
  while (st != PGRES_POLLING_OK) {
    if (st == PGRES_POLLING_FAILED) {
      return tl::make_unexpected(core::classify_pg_connect_error(PQerrorMessage(raw)));
    }
    const short events = st == PGRES_POLLING_READING ? POLLIN : POLLOUT;
    const Wait w = wait_fd(PQsocket(raw), events, deadline);
    if (w != Wait::ready) {
      return tl::make_unexpected(wait_error(w, "connecting"));
    }
    st = PQconnectPoll(raw);
  }
  return session;
}

tl::expected<std::vector<PgRow>, core::ProbeError>
PgSession::query(const std::string& sql, const std::vector<std::string>& params,
                 const Deadline& deadline) {
  PGconn* c = m_conn.get();
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) {
    values.push_back(p.c_str());
  }
  PQsetnonblocking(c, 1);
  if (PQsendQueryParams(c, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                        nullptr, nullptr, 0) == 0) {
    return tl::make_unexpected(
        core::ProbeError{core::Failure::network, core::one_line(PQerrorMessage(c)), ""});
  }
  for (;;) {
    const int f = PQflush(c);
    if (f == 0) {
      break;
    }
    if (f < 0) {
      return tl::make_unexpected(
          core::ProbeError{core::Failure::network, core::one_line(PQerrorMessage(c)), ""});
    }
    if (const Wait w = wait_fd(PQsocket(c), POLLOUT | POLLIN, deadline); w != Wait::ready) {
      return tl::make_unexpected(wait_error(w, "sending the query"));
    }
    PQconsumeInput(c);
  }
  std::vector<PgRow> rows;
  std::optional<core::ProbeError> failure;
  for (;;) {
    while (PQisBusy(c) != 0) {
      const Wait w = wait_fd(PQsocket(c), POLLIN, deadline);
      if (w != Wait::ready) {
        return tl::make_unexpected(wait_error(w, "waiting for the query's answer"));
      }
      if (PQconsumeInput(c) == 0) {
        return tl::make_unexpected(
            core::ProbeError{core::Failure::network, core::one_line(PQerrorMessage(c)), ""});
      }
    }
    PGresult* res = PQgetResult(c);
    if (res == nullptr) {
      break;
    }
    std::unique_ptr<PGresult, decltype(&PQclear)> guard(res, &PQclear);
    const ExecStatusType status = PQresultStatus(res);
    if (status == PGRES_TUPLES_OK) {
      for (int r = 0; r < PQntuples(res); ++r) {
        PgRow row;
        for (int col = 0; col < PQnfields(res); ++col) {
          if (PQgetisnull(res, r, col) != 0) {
            row.emplace_back(std::nullopt);
          } else {
            row.emplace_back(std::string{PQgetvalue(res, r, col)});
          }
        }
        rows.push_back(std::move(row));
      }
    } else if (status != PGRES_COMMAND_OK && !failure) {
      const char* code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
      failure =
          core::classify_pg_query_error(code != nullptr ? code : "", PQresultErrorMessage(res));
    }
  }
  if (failure) {
    return tl::make_unexpected(*failure);
  }
  return rows;
}

} // namespace dbcheck::probe
