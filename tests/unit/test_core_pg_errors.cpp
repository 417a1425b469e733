#include "dbcheck_catch.hpp"

#include <core/pg_errors.hpp>

using namespace dbcheck::core;

TEST_CASE("connection failures are classified from libpq's text", "[core][pg_errors]") {
  const auto [message, kind, sqlstate] = GENERATE(table<const char*, Failure, const char*>({
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  sorry, too many clients "
       "already\n",
       Failure::saturated, "53300"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  remaining connection "
       "slots are reserved for non-replication superuser connections\n",
       Failure::saturated, "53300"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  the database system is "
       "starting up\n",
       Failure::not_ready, "57P03"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  the database system is "
       "shutting down\n",
       Failure::not_ready, "57P03"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  password authentication "
       "failed for user \"healthcheck\"\n",
       Failure::auth, "28P01"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  no pg_hba.conf entry for "
       "host \"127.0.0.1\", user \"healthcheck\", database \"app\", no encryption\n",
       Failure::auth, "28000"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  database \"nope\" does "
       "not exist\n",
       Failure::config, "3D000"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  role \"nobody\" does "
       "not exist\n",
       Failure::auth, "28000"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  too many connections "
       "for role \"healthcheck\"\n",
       Failure::config, "53300"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  too many connections "
       "for database \"app\"\n",
       Failure::saturated, "53300"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: SSL error: certificate verify "
       "failed\n",
       Failure::auth, ""},
      {"connection to server at \"127.0.0.1\", port 5432 failed: server certificate for "
       "\"localhost\" does not match host name \"127.0.0.1\"\n",
       Failure::auth, ""},
      {"connection to server at \"127.0.0.1\", port 5432 failed: root certificate file "
       "\"/etc/dbcheck/ca.pem\" does not exist\nEither provide the file or change sslmode to "
       "disable server certificate verification.\n",
       Failure::config, ""},
      {"connection to server at \"127.0.0.1\", port 5432 failed: SSL error: tlsv1 alert unknown "
       "ca\n",
       Failure::auth, ""},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  certificate "
       "authentication failed for user \"healthcheck\"\n",
       Failure::auth, "28000"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  connection requires a "
       "valid client certificate\n",
       Failure::auth, "28000"},
      {"connection to server at \"127.0.0.1\", port 5432 failed: private key file "
       "\"/etc/dbcheck/hc.key\" has group or world access; file must have permissions u=rw "
       "(0600) or less if owned by the current user, or permissions u=rw,g=r (0640) or less if "
       "owned by root\n",
       Failure::config, ""},
      {"connection to server at \"127.0.0.1\", port 5432 failed: could not read certificate "
       "file \"/etc/dbcheck/hc.crt\": No such file or directory\n",
       Failure::config, ""},
      {"connection to server at \"127.0.0.1\", port 5432 failed: Connection refused\n\tIs the "
       "server running on that host and accepting TCP/IP connections?\n",
       Failure::network, ""},
  }));
  CAPTURE(message);
  const ProbeError e = classify_pg_connect_error(message);
  CHECK(e.kind == kind);
  CHECK(e.code == sqlstate);
  CHECK(e.detail.find("connection to server") == std::string::npos);
}

TEST_CASE("one_line keeps what the server said on one line", "[core][pg_errors]") {
  CHECK(one_line("connection to server at \"127.0.0.1\", port 1 failed: Connection refused\n\tIs "
                 "the server running on that host and accepting TCP/IP connections?\n") ==
        "Connection refused; Is the server running on that host and accepting TCP/IP "
        "connections?");
  CHECK(one_line("connection to server at \"h\", port 5432 failed: FATAL:  sorry, too many "
                 "clients already\n") == "FATAL: sorry, too many clients already");
}

TEST_CASE("one_line drops control characters a peer sent", "[core][pg_errors]") {
  CHECK(one_line("FATAL:  bad\x1b[31m news\x07\n") == "FATAL: bad [31m news");
}

TEST_CASE("query failures are classified by SQLSTATE", "[core][pg_errors]") {
  const auto [code, kind] = GENERATE(table<const char*, Failure>({
      {"57014", Failure::timeout},
      {"55P03", Failure::timeout},
      {"53300", Failure::saturated},
      {"57P01", Failure::not_ready},
      {"57P03", Failure::not_ready},
      {"28P01", Failure::auth},
      {"42501", Failure::config},
      {"08006", Failure::network},
      {"XX000", Failure::protocol},
  }));
  CAPTURE(code);
  const ProbeError e = classify_pg_query_error(code, "ERROR:  something\n");
  CHECK(e.kind == kind);
  CHECK(e.code == code);
  CHECK(e.detail == std::string{code} + ": ERROR: something");
}

TEST_CASE("a full disk is unwritable, in words an operator acts on", "[core][pg_errors]") {
  const char* extend = "ERROR:  could not extend file \"base/16384/16390\": No space left on "
                       "device\nHINT:  Check free disk space.\n";
  const ProbeError by_code = classify_pg_query_error("53100", extend);
  CHECK(by_code.kind == Failure::unwritable);
  CHECK(by_code.code == "53100");
  CHECK(by_code.detail ==
        "disk full: could not extend file \"base/16384/16390\": No space left on device");

  // No SQLSTATE (an old protocol, a message relayed without its fields): the text decides.
  const auto [message, expected] = GENERATE(table<const char*, const char*>({
      {"ERROR:  could not extend file \"base/1/2\" with FileFallocate(): No space left on "
       "device\n",
       "disk full: could not extend file \"base/1/2\" with FileFallocate(): No space left on "
       "device"},
      {"PANIC:  could not write to file \"pg_wal/xlogtemp.42\": No space left on device\n",
       "disk full: could not write to file \"pg_wal/xlogtemp.42\": No space left on device"},
  }));
  CAPTURE(message);
  const ProbeError by_text = classify_pg_query_error("", message);
  CHECK(by_text.kind == Failure::unwritable);
  CHECK(by_text.code.empty());
  CHECK(by_text.detail == expected);
}

TEST_CASE("another error that names no full disk stays what its code says", "[core][pg_errors]") {
  CHECK(
      classify_pg_query_error("", "ERROR:  could not open file \"x\": Permission denied\n").kind ==
      Failure::protocol);
  CHECK(classify_pg_query_error("58030", "ERROR:  could not read block 0\n").kind ==
        Failure::protocol);
}

TEST_CASE("a session that cannot start on a full disk is unwritable", "[core][pg_errors]") {
  const ProbeError e = classify_pg_connect_error(
      "connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  could not write to "
      "file \"global/pg_internal.init.123\": No space left on device\n");
  CHECK(e.kind == Failure::unwritable);
  CHECK(e.detail ==
        "FATAL: could not write to file \"global/pg_internal.init.123\": No space left on device");
}
