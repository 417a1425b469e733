/* The I/O floor of one PostgreSQL writer check: one libpq connect + auth + query on the node and
 * one HTTP GET to Patroni, in parallel (as dbcheck asks its two opinions), and nothing else: no
 * configuration, no parsing, no verdict beyond "both answered". bench/perf/run times it beside dbcheck.
 *
 *   PGPASSFILE=FILE pg_floor HOST PORT DBNAME USER PATRONI_URL
 *
 * The password comes from PGPASSFILE (libpq reads it), never from argv. Exit 0 when the node says
 * it is not in recovery and Patroni answered 200, 1 otherwise (the reason on stderr). */
#include <curl/curl.h>
#include <libpq-fe.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct http_get {
  const char* url;
  long status;
  CURLcode rc;
};

/* The body is read and dropped: the floor pays for the transfer, not for parsing it. */
static size_t discard(char* data, size_t size, size_t n, void* user) {
  (void)data;
  (void)user;
  return size * n;
}

static void* get_patroni(void* arg) {
  struct http_get* g = arg;
  CURL* h = curl_easy_init();
  if (h == NULL) {
    g->rc = CURLE_FAILED_INIT;
    return NULL;
  }
  curl_easy_setopt(h, CURLOPT_URL, g->url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 2000L);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
  g->rc = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &g->status);
  curl_easy_cleanup(h);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: PGPASSFILE=FILE %s HOST PORT DBNAME USER PATRONI_URL\n", argv[0]);
    return 2;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  struct http_get get = {argv[5], 0, CURLE_OK};
  pthread_t thread;
  if (pthread_create(&thread, NULL, get_patroni, &get) != 0) {
    fprintf(stderr, "cannot start the HTTP thread\n");
    return 1;
  }

  const char* keys[] = {"hostaddr", "port", "dbname", "user", "connect_timeout", NULL};
  const char* values[] = {argv[1], argv[2], argv[3], argv[4], "2", NULL};
  PGconn* conn = PQconnectdbParams(keys, values, 0);
  int ok = 0;
  if (PQstatus(conn) != CONNECTION_OK) {
    fprintf(stderr, "PostgreSQL: %s", PQerrorMessage(conn));
  } else {
    PGresult* res = PQexec(conn, "SELECT pg_is_in_recovery()");
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
      fprintf(stderr, "PostgreSQL: %s", PQerrorMessage(conn));
    } else if (strcmp(PQgetvalue(res, 0, 0), "f") != 0) {
      fprintf(stderr, "PostgreSQL: in recovery\n");
    } else {
      ok = 1;
    }
    PQclear(res);
  }
  PQfinish(conn);

  pthread_join(thread, NULL);
  if (get.rc != CURLE_OK) {
    fprintf(stderr, "Patroni: %s\n", curl_easy_strerror(get.rc));
    ok = 0;
  } else if (get.status != 200) {
    fprintf(stderr, "Patroni: HTTP %ld\n", get.status);
    ok = 0;
  }
  curl_global_cleanup();
  return ok ? 0 : 1;
}
