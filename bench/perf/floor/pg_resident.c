/* The resident floor of a PostgreSQL agent: a C program that links only libpq, keeps one
 * connection to the node and asks it one question a second, as the agent's prober does with its
 * kept connection, and nothing else (no HTTP client, no server, no configuration).
 * bench/perf/agent_footprint.py reads its memory beside the agent's.
 *
 *   PGPASSFILE=FILE pg_resident HOST PORT DBNAME USER
 *
 * The password comes from PGPASSFILE (libpq reads it), never from argv. Runs until killed;
 * exits 1 (the reason on stderr) if the connection fails. */
#include <libpq-fe.h>

#include <stdio.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: PGPASSFILE=FILE pg_resident HOST PORT DBNAME USER\n");
    return 2;
  }
  const char* keys[] = {"host", "port", "dbname", "user", "connect_timeout", NULL};
  const char* values[] = {argv[1], argv[2], argv[3], argv[4], "2", NULL};
  PGconn* conn = PQconnectdbParams(keys, values, 0);
  for (;;) {
    if (PQstatus(conn) != CONNECTION_OK) {
      fprintf(stderr, "pg_resident: %s", PQerrorMessage(conn));
      return 1;
    }
    PQclear(PQexec(conn, "SELECT pg_is_in_recovery()"));
    sleep(1);
  }
}
