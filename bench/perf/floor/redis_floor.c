/* The I/O floor of one Redis writer check: AUTH + ROLE on the node and AUTH + SENTINEL
 * GET-MASTER-ADDR-BY-NAME on each of three Sentinels, the four in parallel (as dbcheck asks
 * them), and nothing else: no configuration, no majority rule beyond "every one answered".
 * bench/perf/run times it beside dbcheck.
 *
 *   REDISCLI_AUTH=PASSWORD redis_floor USER MASTER_NAME NODE_PORT SENTINEL_PORT...
 *
 * Everything is on 127.0.0.1. The password comes from the environment, never from argv. Exit 0
 * when the node says ROLE master and each Sentinel named a master, 1 otherwise (why on stderr). */
#include <hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PEERS 8

struct ask {
  int port;
  const char* user;
  const char* password;
  const char* master_name; /* NULL: the data node (ROLE) */
  int ok;
  char error[128];
};

static void* ask_peer(void* arg) {
  struct ask* a = arg;
  const struct timeval timeout = {2, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", a->port, timeout);
  if (c == NULL || c->err) {
    snprintf(a->error, sizeof a->error, "port %d: %.100s", a->port, c ? c->errstr : "no memory");
    redisFree(c);
    return NULL;
  }
  redisSetTimeout(c, timeout);
  redisReply* r = redisCommand(c, "AUTH %s %s", a->user, a->password);
  if (r == NULL || r->type == REDIS_REPLY_ERROR) {
    snprintf(a->error, sizeof a->error, "port %d: AUTH %.100s", a->port, r ? r->str : c->errstr);
  } else {
    freeReplyObject(r);
    r = a->master_name ? redisCommand(c, "SENTINEL GET-MASTER-ADDR-BY-NAME %s", a->master_name)
                       : redisCommand(c, "ROLE");
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 1) {
      snprintf(a->error, sizeof a->error, "port %d: unexpected reply", a->port);
    } else if (a->master_name == NULL && (r->element[0]->type != REDIS_REPLY_STRING ||
                                          strcmp(r->element[0]->str, "master") != 0)) {
      snprintf(a->error, sizeof a->error, "port %d: ROLE %.100s", a->port, r->element[0]->str);
    } else {
      a->ok = 1;
    }
  }
  freeReplyObject(r);
  redisFree(c);
  return NULL;
}

int main(int argc, char** argv) {
  const char* password = getenv("REDISCLI_AUTH");
  if (argc < 5 || argc - 3 > MAX_PEERS || password == NULL) {
    fprintf(stderr,
            "usage: REDISCLI_AUTH=PASSWORD %s USER MASTER_NAME NODE_PORT SENTINEL_PORT...\n",
            argv[0]);
    return 2;
  }
  struct ask asks[MAX_PEERS];
  pthread_t threads[MAX_PEERS];
  const int peers = argc - 3;
  for (int i = 0; i < peers; ++i) {
    asks[i] = (struct ask){atoi(argv[3 + i]), argv[1], password, i == 0 ? NULL : argv[2], 0, ""};
    if (pthread_create(&threads[i], NULL, ask_peer, &asks[i]) != 0) {
      fprintf(stderr, "cannot start a thread\n");
      return 1;
    }
  }
  int ok = 1;
  for (int i = 0; i < peers; ++i) {
    pthread_join(threads[i], NULL);
    if (!asks[i].ok) {
      fprintf(stderr, "%s\n", asks[i].error);
      ok = 0;
    }
  }
  return ok ? 0 : 1;
}
