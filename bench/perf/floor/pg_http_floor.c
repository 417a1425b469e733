/* The I/O floor of one PostgreSQL writer check with the least a C program needs to load: libpq
 * for the node and a hand-written HTTP/1.0 GET to Patroni over a plain socket (no libcurl), in
 * parallel, and nothing else. bench/perf/run times it beside dbcheck and pg_floor.
 *
 *   PGPASSFILE=FILE pg_http_floor HOST PORT DBNAME USER http://IP:PORT/PATH
 *
 * The password comes from PGPASSFILE (libpq reads it), never from argv. Exit 0 when the node says
 * it is not in recovery and Patroni answered 200, 1 otherwise (the reason on stderr). */
#include <libpq-fe.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

struct http_get {
  const char* url;
  int status;
  char error[128];
};

/* GET http://IP:PORT/PATH with a 2 s socket timeout; the body is read and dropped. */
static void* get_patroni(void* arg) {
  struct http_get* g = arg;
  char host[64];
  int port = 0;
  int path_at = 0;
  if (sscanf(g->url, "http://%63[0-9.]:%d%n", host, &port, &path_at) != 2) {
    snprintf(g->error, sizeof g->error, "not an http://IP:PORT/PATH URL");
    return NULL;
  }
  const char* path = g->url[path_at] == '/' ? g->url + path_at : "/";
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  inet_pton(AF_INET, host, &addr.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  const struct timeval timeout = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  if (connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
    snprintf(g->error, sizeof g->error, "cannot connect");
    close(fd);
    return NULL;
  }
  char buf[16384];
  int n = snprintf(buf, sizeof buf, "GET %s HTTP/1.0\r\nHost: %s:%d\r\n\r\n", path, host, port);
  if (write(fd, buf, (size_t)n) != n) {
    snprintf(g->error, sizeof g->error, "cannot send");
    close(fd);
    return NULL;
  }
  /* The status line is in the first bytes; the rest is read and dropped until Patroni closes. */
  ssize_t got = read(fd, buf, sizeof buf - 1);
  buf[got > 0 ? got : 0] = '\0';
  if (sscanf(buf, "HTTP/%*d.%*d %d", &g->status) != 1) {
    snprintf(g->error, sizeof g->error, "no HTTP status line");
  }
  char rest[16384];
  while (read(fd, rest, sizeof rest) > 0) {
  }
  close(fd);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: PGPASSFILE=FILE %s HOST PORT DBNAME USER http://IP:PORT/PATH\n", argv[0]);
    return 2;
  }
  struct http_get get = {argv[5], 0, ""};
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
  if (get.error[0] != '\0') {
    fprintf(stderr, "Patroni: %s\n", get.error);
    ok = 0;
  } else if (get.status != 200) {
    fprintf(stderr, "Patroni: HTTP %d\n", get.status);
    ok = 0;
  }
  return ok ? 0 : 1;
}
