/* Load client for the agent-check port: CONNECTIONS pollers, each connecting, sending
 * "BACKEND\n" as soon as the connection is up (as HAProxy's agent-send does), reading one reply
 * line and closing — one TCP connection per answer, again and again for SECONDS. One thread, epoll,
 * so that the client costs little of the CPU it shares with the agent (bench/perf/run).
 *
 *   agent_poll PORT BACKEND CONNECTIONS SECONDS EXPECT
 *
 * Prints one JSON line: answers whose reply starts with EXPECT, their latency percentiles (connect
 * to reply), and errors by kind (connect, timeout: no reply within 2 s, short: closed before a
 * full line, unexpected: another reply, the first kept in "sample"). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define REPLY_MAX 512
#define REPLY_TIMEOUT_NS 2000000000LL

struct poller {
  int fd;
  int64_t started;
  size_t got;
  char reply[REPLY_MAX];
};

static struct sockaddr_in g_addr;
static char g_request[256];
static size_t g_request_len;
static const char* g_expect;
static int g_epoll;
static uint32_t* g_latencies_us;
static size_t g_answers, g_capacity;
static long g_connect_errors, g_timeouts, g_short, g_unexpected;
static char g_sample[REPLY_MAX];

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void finish(struct poller* p) {
  if (p->fd >= 0) {
    close(p->fd); /* also removes it from the epoll set */
    p->fd = -1;
  }
}

/* A new connection for p; the request goes out when it is writable. */
static void start(struct poller* p) {
  p->got = 0;
  p->started = now_ns();
  p->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (p->fd < 0) {
    ++g_connect_errors;
    return;
  }
  const int one = 1;
  setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(p->fd, (struct sockaddr*)&g_addr, sizeof g_addr) != 0 && errno != EINPROGRESS) {
    ++g_connect_errors;
    finish(p);
    return;
  }
  struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = p};
  epoll_ctl(g_epoll, EPOLL_CTL_ADD, p->fd, &ev);
}

static void record(struct poller* p) {
  const char* nl = memchr(p->reply, '\n', p->got);
  const size_t len = (size_t)(nl - p->reply);
  if (strncmp(p->reply, g_expect, strlen(g_expect)) != 0) {
    if (g_unexpected++ == 0) {
      snprintf(g_sample, sizeof g_sample, "%.*s", (int)len, p->reply);
    }
    return;
  }
  if (g_answers == g_capacity) {
    g_capacity = g_capacity ? 2 * g_capacity : 65536;
    g_latencies_us = realloc(g_latencies_us, g_capacity * sizeof *g_latencies_us);
    if (g_latencies_us == NULL) {
      fprintf(stderr, "out of memory\n");
      exit(1);
    }
  }
  g_latencies_us[g_answers++] = (uint32_t)((now_ns() - p->started) / 1000);
}

static void on_event(struct poller* p, uint32_t events) {
  if (events & EPOLLOUT) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0 || send(p->fd, g_request, g_request_len, MSG_NOSIGNAL) != (ssize_t)g_request_len) {
      ++g_connect_errors;
      finish(p);
      return;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};
    epoll_ctl(g_epoll, EPOLL_CTL_MOD, p->fd, &ev);
    return;
  }
  const ssize_t n = recv(p->fd, p->reply + p->got, REPLY_MAX - p->got, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    return;
  }
  if (n > 0) {
    p->got += (size_t)n;
    if (memchr(p->reply, '\n', p->got) != NULL) {
      record(p);
      finish(p);
      return;
    }
    if (p->got < REPLY_MAX) {
      return;
    }
  }
  ++g_short; /* closed, reset or 512 bytes without a line end */
  finish(p);
}

static int by_value(const void* a, const void* b) {
  const uint32_t x = *(const uint32_t*)a, y = *(const uint32_t*)b;
  return (x > y) - (x < y);
}

static uint32_t percentile(double q) {
  if (g_answers == 0) {
    return 0;
  }
  size_t i = (size_t)(q * (double)(g_answers - 1) + 0.5);
  return g_latencies_us[i];
}

int main(int argc, char** argv) {
  if (argc != 6 || atoi(argv[3]) < 1 || atof(argv[4]) <= 0) {
    fprintf(stderr, "usage: %s PORT BACKEND CONNECTIONS SECONDS EXPECT\n", argv[0]);
    return 2;
  }
  g_addr.sin_family = AF_INET;
  g_addr.sin_port = htons((uint16_t)atoi(argv[1]));
  g_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  g_request_len = (size_t)snprintf(g_request, sizeof g_request, "%s\n", argv[2]);
  const int count = atoi(argv[3]);
  g_expect = argv[5];
  g_epoll = epoll_create1(0);
  struct poller* pollers = calloc((size_t)count, sizeof *pollers);
  struct epoll_event* events = calloc((size_t)count, sizeof *events);
  if (g_epoll < 0 || pollers == NULL || events == NULL) {
    perror("agent_poll");
    return 1;
  }

  const int64_t t0 = now_ns();
  const int64_t stop_at = t0 + (int64_t)(atof(argv[4]) * 1e9);
  for (int i = 0; i < count; ++i) {
    start(&pollers[i]);
  }
  for (;;) {
    const int64_t now = now_ns();
    int open = 0;
    for (int i = 0; i < count; ++i) { /* time out, then restart the finished ones */
      struct poller* p = &pollers[i];
      if (p->fd >= 0 && now - p->started > REPLY_TIMEOUT_NS) {
        ++g_timeouts;
        finish(p);
      }
      if (p->fd < 0 && now < stop_at) {
        start(p);
      }
      open += p->fd >= 0;
    }
    if (open == 0) {
      break; /* past stop_at, every poller done: the last answers are counted, none cut */
    }
    const int n = epoll_wait(g_epoll, events, count, 10);
    for (int i = 0; i < n; ++i) {
      on_event(events[i].data.ptr, events[i].events);
    }
  }
  const double seconds = (double)(now_ns() - t0) / 1e9;

  qsort(g_latencies_us, g_answers, sizeof *g_latencies_us, by_value);
  for (char* c = g_sample; *c; ++c) { /* keep the JSON valid whatever the reply holds */
    if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) {
      *c = '?';
    }
  }
  printf("{\"answers\": %zu, \"seconds\": %.3f, \"p50_us\": %u, \"p99_us\": %u, \"max_us\": %u, "
         "\"connect\": %ld, \"timeout\": %ld, \"short\": %ld, \"unexpected\": %ld, \"sample\": "
         "\"%s\"}\n",
         g_answers, seconds, percentile(0.50), percentile(0.99), percentile(1.0), g_connect_errors,
         g_timeouts, g_short, g_unexpected, g_sample);
  return 0;
}
