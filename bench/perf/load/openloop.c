/* Open-loop load generator for dbcheck-agent: N pollers, each asking RATE times a second on its
 * own schedule (a random phase in the first period, then every 1/RATE s), as HAProxy's checks
 * of N servers do. A poller whose previous ask is still out sends the next one as soon as it
 * is done, and every latency is counted from the SCHEDULED send time: a stall of the agent
 * counts for every ask it delayed (no coordinated omission), and the generator's own lag shows
 * too (reported apart: late_sends, send_lag_max_us). One thread, epoll, a timerfd for the schedule.
 *
 *   openloop --mode agent|http-keepalive|http-close --port PORT [--host 127.0.0.1]
 *            [--pollers 1000] [--rate 1] [--seconds 10] [--sources 127.0.0.1[,127.0.0.2...]]
 *            [--backend pg_write] [--path /backend/pg_write] [--expect up|200]
 *            [--timeout-ms 1000] [--seed 1]
 *
 * agent: connect, send "BACKEND\n" once connected (HAProxy's agent-send), read one line, close.
 * http-keepalive: one HTTP/1.1 connection per poller, reused; reopened (inside the timed ask)
 * when the server closed it. http-close: one connection per ask, "Connection: close".
 * Poller i binds source address SOURCES[i % count] (IP_BIND_ADDRESS_NO_PORT: the port is chosen
 * at connect, so one address reaches ~28k connections to one port).
 *
 * Prints one JSON object: asks sent, answers (the expected reply: a line starting with EXPECT,
 * or that HTTP status), answers/s, latency percentiles of the answers in microseconds (p50_us...:
 * from the scheduled time; sent_p50_us...: from the actual send, i.e. without the generator's own
 * lag), send_lag_max_us and late_sends (asks sent more than 1 ms after their time), errors by
 * kind (connect: refused or failed to connect; reset: ECONNRESET/EPIPE; closed: EOF before a
 * full answer; timeout: no answer TIMEOUT_MS after the send; unexpected: another reply, the
 * first kept in "sample"; socket: socket()/bind() failed, e.g. EMFILE), and keep-alive
 * connections the server closed while idle ("idle_closes", not errors). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

#define REPLY_MAX 2048
#define MAX_SOURCES 256

enum mode { MODE_AGENT, MODE_HTTP_KEEPALIVE, MODE_HTTP_CLOSE };
enum err { E_CONNECT, E_RESET, E_CLOSED, E_TIMEOUT, E_UNEXPECTED, E_SOCKET, E_COUNT };
static const char* const k_err_names[E_COUNT] = {"connect", "reset",      "closed",
                                                 "timeout", "unexpected", "socket"};

struct poller {
  int index;
  int fd;           /* -1: no connection */
  int busy;         /* an ask is out */
  int connected;    /* the connect completed (keep-alive: reusable) */
  uint64_t seq;     /* ask number k: scheduled at phase + k * period */
  int64_t sched;    /* scheduled send time of the ask out (or next) */
  int64_t sent;     /* when the ask was started */
  size_t got;
  char reply[REPLY_MAX];
  size_t heap_pos; /* position in the schedule heap, SIZE_MAX when not in it */
};

/* In-flight asks in start order, for the timeouts (a constant timeout keeps them sorted). */
struct flight {
  struct poller* p;
  uint64_t seq;
  int64_t deadline;
};

static enum mode g_mode = MODE_AGENT;
static struct sockaddr_in g_dst;
static struct sockaddr_in g_sources[MAX_SOURCES];
static int g_source_count;
static char g_request[512];
static size_t g_request_len;
static const char* g_expect;
static int g_expect_status;
static int64_t g_period_ns, g_timeout_ns;
static int g_epoll;

static struct poller** g_heap; /* min-heap on sched of the idle pollers */
static size_t g_heap_len;
static struct flight* g_flights;
static size_t g_flight_head, g_flight_len, g_flight_cap;

static uint32_t* g_lat_us;  /* from the scheduled send time */
static uint32_t* g_svc_us;  /* from the actual send: the agent's share, without the generator's lag */
static size_t g_answers, g_lat_cap;
static uint64_t g_sent, g_errors[E_COUNT], g_idle_closes, g_late_sends;
static int64_t g_send_lag_max;
static char g_sample[REPLY_MAX];

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void* xrealloc(void* p, size_t n) {
  p = realloc(p, n);
  if (p == NULL) {
    fprintf(stderr, "openloop: out of memory\n");
    exit(1);
  }
  return p;
}

/* ------------------------------------------------------------------ schedule heap */
static void heap_swap(size_t a, size_t b) {
  struct poller* t = g_heap[a];
  g_heap[a] = g_heap[b];
  g_heap[b] = t;
  g_heap[a]->heap_pos = a;
  g_heap[b]->heap_pos = b;
}

static void heap_push(struct poller* p) {
  size_t i = g_heap_len++;
  g_heap[i] = p;
  p->heap_pos = i;
  while (i > 0 && g_heap[(i - 1) / 2]->sched > g_heap[i]->sched) {
    heap_swap(i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
}

static struct poller* heap_pop(void) {
  struct poller* top = g_heap[0];
  top->heap_pos = SIZE_MAX;
  if (--g_heap_len == 0) {
    return top;
  }
  g_heap[0] = g_heap[g_heap_len];
  g_heap[0]->heap_pos = 0;
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < g_heap_len && g_heap[l]->sched < g_heap[m]->sched) {
      m = l;
    }
    if (r < g_heap_len && g_heap[r]->sched < g_heap[m]->sched) {
      m = r;
    }
    if (m == i) {
      break;
    }
    heap_swap(i, m);
    i = m;
  }
  return top;
}

/* ------------------------------------------------------------------ connections */
static void drop_fd(struct poller* p) {
  if (p->fd >= 0) {
    close(p->fd); /* also leaves the epoll set */
    p->fd = -1;
  }
  p->connected = 0;
}

static void watch(struct poller* p, uint32_t events, int op) {
  struct epoll_event ev = {.events = events, .data.ptr = p};
  epoll_ctl(g_epoll, op, p->fd, &ev);
}

/* Opens p's connection (non-blocking); 0 on success, else the error kind. */
static int open_connection(struct poller* p) {
  p->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (p->fd < 0) {
    return E_SOCKET;
  }
  const int one = 1;
  setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const struct sockaddr_in* src = &g_sources[p->index % g_source_count];
  if (g_source_count > 1 || src->sin_addr.s_addr != htonl(INADDR_LOOPBACK)) {
    setsockopt(p->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    if (bind(p->fd, (const struct sockaddr*)src, sizeof *src) != 0) {
      drop_fd(p);
      return E_SOCKET;
    }
  }
  if (connect(p->fd, (const struct sockaddr*)&g_dst, sizeof g_dst) != 0 && errno != EINPROGRESS) {
    const int e = errno;
    drop_fd(p);
    return e == EMFILE || e == ENFILE || e == EADDRNOTAVAIL ? E_SOCKET : E_CONNECT;
  }
  watch(p, EPOLLOUT, EPOLL_CTL_ADD);
  return 0;
}

static void send_request(struct poller* p);
static void ask_done(struct poller* p, int64_t now);

static void fail(struct poller* p, int kind, int64_t now) {
  ++g_errors[kind];
  drop_fd(p);
  ask_done(p, now);
}

/* Starts ask p->seq (scheduled at p->sched). */
static void start_ask(struct poller* p, int64_t now) {
  p->busy = 1;
  p->got = 0;
  p->sent = now;
  ++g_sent;
  const int64_t lag = now - p->sched;
  if (lag > g_send_lag_max) {
    g_send_lag_max = lag;
  }
  if (lag > 1000000) {
    ++g_late_sends;
  }
  if (g_flight_len == g_flight_cap) { /* grow the ring, unrolled in order */
    struct flight* f = xrealloc(NULL, 2 * g_flight_cap * sizeof *f);
    for (size_t i = 0; i < g_flight_len; ++i) {
      f[i] = g_flights[(g_flight_head + i) % g_flight_cap];
    }
    free(g_flights);
    g_flights = f;
    g_flight_head = 0;
    g_flight_cap *= 2;
  }
  g_flights[(g_flight_head + g_flight_len++) % g_flight_cap] =
      (struct flight){p, p->seq, now + g_timeout_ns};
  if (g_mode == MODE_HTTP_KEEPALIVE && p->connected) {
    send_request(p);
    return;
  }
  drop_fd(p);
  const int e = open_connection(p);
  if (e) {
    fail(p, e, now);
  }
}

static void send_request(struct poller* p) {
  const ssize_t n = send(p->fd, g_request, g_request_len, MSG_NOSIGNAL);
  if (n != (ssize_t)g_request_len) {
    fail(p, n < 0 && errno != ECONNRESET && errno != EPIPE ? E_CONNECT : E_RESET, now_ns());
    return;
  }
  watch(p, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
}

/* The ask is over (answered or failed): schedule the next one. */
static void ask_done(struct poller* p, int64_t now) {
  (void)now;
  p->busy = 0;
  ++p->seq;
  p->sched += g_period_ns;
  heap_push(p);
}

static void record_answer(struct poller* p, int64_t now) {
  if (g_answers == g_lat_cap) {
    g_lat_cap = g_lat_cap ? 2 * g_lat_cap : 65536;
    g_lat_us = xrealloc(g_lat_us, g_lat_cap * sizeof *g_lat_us);
    g_svc_us = xrealloc(g_svc_us, g_lat_cap * sizeof *g_svc_us);
  }
  const int64_t us = (now - p->sched) / 1000, svc = (now - p->sent) / 1000;
  g_svc_us[g_answers] = svc > UINT32_MAX ? UINT32_MAX : (uint32_t)svc;
  g_lat_us[g_answers++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static void unexpected(struct poller* p, size_t len, int64_t now) {
  if (g_errors[E_UNEXPECTED] == 0) {
    snprintf(g_sample, sizeof g_sample, "%.*s", (int)len, p->reply);
  }
  fail(p, E_UNEXPECTED, now);
}

/* Is p->reply a complete answer? 1: yes (judged and finished), 0: need more. */
static int judge(struct poller* p, int eof, int64_t now) {
  if (g_mode == MODE_AGENT) {
    const char* nl = memchr(p->reply, '\n', p->got);
    if (nl == NULL) {
      return 0;
    }
    const size_t len = (size_t)(nl - p->reply);
    if (strncmp(p->reply, g_expect, strlen(g_expect)) != 0) {
      unexpected(p, len, now);
      return 1;
    }
    record_answer(p, now);
    drop_fd(p);
    ask_done(p, now);
    return 1;
  }
  /* HTTP: status line, headers, then Content-Length bytes (or up to the close). */
  const char* end = memmem(p->reply, p->got, "\r\n\r\n", 4);
  if (end == NULL) {
    return 0;
  }
  const size_t head = (size_t)(end - p->reply) + 4;
  long length = -1;
  int close_after = 0;
  for (const char* line = memchr(p->reply, '\n', head); line != NULL && line < end;
       line = memchr(line + 1, '\n', (size_t)(end - line))) {
    const char* value = line + 1;
    const char* eol = memchr(value, '\r', (size_t)(end + 2 - value));
    if (strncasecmp(value, "content-length:", 15) == 0) {
      length = strtol(value + 15, NULL, 10);
    } else if (strncasecmp(value, "connection:", 11) == 0 && eol != NULL &&
               memmem(value + 11, (size_t)(eol - value - 11), "close", 5) != NULL) {
      close_after = 1;
    }
  }
  if (length >= 0 ? p->got < head + (size_t)length : !eof) {
    return 0;
  }
  int status = 0;
  if (sscanf(p->reply, "HTTP/%*d.%*d %d", &status) != 1 || status != g_expect_status) {
    const char* cr = memchr(p->reply, '\r', p->got);
    unexpected(p, cr ? (size_t)(cr - p->reply) : p->got, now);
    return 1;
  }
  record_answer(p, now);
  if (g_mode == MODE_HTTP_CLOSE || close_after || length < 0) {
    drop_fd(p);
  } else {
    watch(p, EPOLLRDHUP, EPOLL_CTL_MOD); /* idle: only to see the server close it */
  }
  ask_done(p, now);
  return 1;
}

static void on_event(struct poller* p, uint32_t events, int64_t now) {
  if (!p->busy) { /* an idle keep-alive connection: the server closed it (or sent junk) */
    ++g_idle_closes;
    drop_fd(p);
    return;
  }
  if (!p->connected) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0 || (events & (EPOLLERR | EPOLLHUP))) {
      fail(p, err == ECONNRESET ? E_RESET : E_CONNECT, now);
      return;
    }
    p->connected = 1;
    send_request(p);
    return;
  }
  for (;;) {
    const ssize_t n = recv(p->fd, p->reply + p->got, REPLY_MAX - 1 - p->got, 0);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      return;
    }
    if (n < 0) {
      fail(p, errno == ECONNRESET || errno == EPIPE ? E_RESET : E_CLOSED, now);
      return;
    }
    p->got += (size_t)n;
    if (judge(p, n == 0, now)) {
      return;
    }
    if (n == 0 || p->got == REPLY_MAX - 1) {
      fail(p, E_CLOSED, now); /* closed before a full answer, or an oversized one */
      return;
    }
  }
}

/* Times out every ask whose deadline passed. */
static void expire(int64_t now) {
  while (g_flight_len > 0) {
    struct flight* f = &g_flights[g_flight_head];
    if (f->p->busy && f->p->seq == f->seq) {
      if (f->deadline > now) {
        return;
      }
      fail(f->p, E_TIMEOUT, now);
    }
    g_flight_head = (g_flight_head + 1) % g_flight_cap;
    --g_flight_len;
  }
}

static int by_value(const void* a, const void* b) {
  const uint32_t x = *(const uint32_t*)a, y = *(const uint32_t*)b;
  return (x > y) - (x < y);
}

static uint32_t percentile(const uint32_t* sorted, double q) {
  if (g_answers == 0) {
    return 0;
  }
  const size_t i = (size_t)(q * (double)(g_answers - 1) + 0.5);
  return sorted[i];
}

static int parse_sources(char* list) {
  for (char* s = strtok(list, ","); s != NULL; s = strtok(NULL, ",")) {
    if (g_source_count == MAX_SOURCES) {
      return -1;
    }
    struct sockaddr_in* a = &g_sources[g_source_count++];
    a->sin_family = AF_INET;
    if (inet_pton(AF_INET, s, &a->sin_addr) != 1) {
      return -1;
    }
  }
  return g_source_count > 0 ? 0 : -1;
}

static void usage(const char* argv0) {
  fprintf(stderr,
          "usage: %s --mode agent|http-keepalive|http-close --port PORT [--host ADDR] "
          "[--pollers N] [--rate HZ] [--seconds S] [--sources A,B,...] [--backend NAME] "
          "[--path PATH] [--expect PREFIX|STATUS] [--timeout-ms MS] [--seed N]\n",
          argv0);
  exit(2);
}

int main(int argc, char** argv) {
  const char* host = "127.0.0.1";
  const char* backend = "pg_write";
  const char* path = NULL;
  const char* expect = NULL;
  char sources[4096] = "127.0.0.1";
  int port = 0, pollers = 1000;
  double rate = 1.0, seconds = 10.0, timeout_ms = 1000.0;
  unsigned seed = 1;
  static const struct option opts[] = {
      {"mode", required_argument, 0, 'm'},    {"port", required_argument, 0, 'p'},
      {"host", required_argument, 0, 'H'},    {"pollers", required_argument, 0, 'n'},
      {"rate", required_argument, 0, 'r'},    {"seconds", required_argument, 0, 's'},
      {"sources", required_argument, 0, 'S'}, {"backend", required_argument, 0, 'b'},
      {"path", required_argument, 0, 'P'},    {"expect", required_argument, 0, 'e'},
      {"timeout-ms", required_argument, 0, 't'}, {"seed", required_argument, 0, 'x'},
      {0, 0, 0, 0}};
  for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
    switch (c) {
    case 'm':
      if (strcmp(optarg, "agent") == 0) {
        g_mode = MODE_AGENT;
      } else if (strcmp(optarg, "http-keepalive") == 0) {
        g_mode = MODE_HTTP_KEEPALIVE;
      } else if (strcmp(optarg, "http-close") == 0) {
        g_mode = MODE_HTTP_CLOSE;
      } else {
        usage(argv[0]);
      }
      break;
    case 'p': port = atoi(optarg); break;
    case 'H': host = optarg; break;
    case 'n': pollers = atoi(optarg); break;
    case 'r': rate = atof(optarg); break;
    case 's': seconds = atof(optarg); break;
    case 'S': snprintf(sources, sizeof sources, "%s", optarg); break;
    case 'b': backend = optarg; break;
    case 'P': path = optarg; break;
    case 'e': expect = optarg; break;
    case 't': timeout_ms = atof(optarg); break;
    case 'x': seed = (unsigned)strtoul(optarg, NULL, 10); break;
    default: usage(argv[0]);
    }
  }
  g_dst.sin_family = AF_INET;
  g_dst.sin_port = htons((uint16_t)port);
  if (port <= 0 || port > 65535 || pollers < 1 || rate <= 0 || seconds <= 0 || timeout_ms <= 0 ||
      inet_pton(AF_INET, host, &g_dst.sin_addr) != 1 || parse_sources(sources) != 0) {
    usage(argv[0]);
  }
  if (g_mode == MODE_AGENT) {
    g_expect = expect ? expect : "up";
    g_request_len = (size_t)snprintf(g_request, sizeof g_request, "%s\n", backend);
  } else {
    g_expect_status = expect ? atoi(expect) : 200;
    char default_path[256];
    snprintf(default_path, sizeof default_path, "/backend/%s", backend);
    g_request_len = (size_t)snprintf(g_request, sizeof g_request,
                                     "GET %s HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n",
                                     path ? path : default_path, host, port,
                                     g_mode == MODE_HTTP_CLOSE ? "Connection: close\r\n" : "");
  }
  g_period_ns = (int64_t)(1e9 / rate);
  g_timeout_ns = (int64_t)(timeout_ms * 1e6);

  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max; /* a poller holds a descriptor at most */
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  g_epoll = epoll_create1(EPOLL_CLOEXEC);
  const int timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  struct poller* all = calloc((size_t)pollers, sizeof *all);
  g_heap = calloc((size_t)pollers, sizeof *g_heap);
  g_flight_cap = 2 * (size_t)pollers + 1024;
  g_flights = calloc(g_flight_cap, sizeof *g_flights);
  struct epoll_event* events = calloc(1024, sizeof *events);
  if (g_epoll < 0 || timer < 0 || all == NULL || g_heap == NULL || g_flights == NULL ||
      events == NULL) {
    perror("openloop");
    return 1;
  }
  struct epoll_event tev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(g_epoll, EPOLL_CTL_ADD, timer, &tev);

  /* Phases: uniform over the first period (xorshift; the same SEED gives the same schedule).
   * The first asks start 50 ms from now, so that setting up is not counted as lag. */
  const int64_t t0 = now_ns() + 50000000LL;
  const int64_t stop_at = t0 + (int64_t)(seconds * 1e9);
  uint64_t x = 0x9E3779B97F4A7C15ULL ^ seed;
  for (int i = 0; i < pollers; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    all[i] = (struct poller){.index = i, .fd = -1, .heap_pos = SIZE_MAX};
    all[i].sched = t0 + (int64_t)((x >> 11) % (uint64_t)g_period_ns);
    heap_push(&all[i]);
  }

  int64_t armed = 0;
  for (;;) {
    int64_t now = now_ns();
    while (g_heap_len > 0 && g_heap[0]->sched <= now && g_heap[0]->sched < stop_at) {
      start_ask(heap_pop(), now);
      now = now_ns();
    }
    expire(now);
    const int more = g_heap_len > 0 && g_heap[0]->sched < stop_at;
    if (!more && g_flight_len == 0) {
      break; /* past stop_at and every ask answered or timed out */
    }
    /* Wake at the next scheduled send, or the next timeout check (every 10 ms at most). */
    int64_t wake = more ? g_heap[0]->sched : now + 10000000LL;
    if (wake > now + 10000000LL) {
      wake = now + 10000000LL;
    }
    if (wake != armed) {
      struct itimerspec its = {.it_value = {.tv_sec = wake / 1000000000LL,
                                            .tv_nsec = wake % 1000000000LL}};
      timerfd_settime(timer, TFD_TIMER_ABSTIME, &its, NULL);
      armed = wake;
    }
    const int n = epoll_wait(g_epoll, events, 1024, -1);
    now = now_ns();
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == NULL) {
        uint64_t ticks;
        if (read(timer, &ticks, sizeof ticks) < 0) {
          /* EAGAIN: already read */
        }
        armed = 0;
        continue;
      }
      struct poller* p = events[i].data.ptr;
      if (p->fd >= 0) {
        on_event(p, events[i].events, now);
      }
    }
  }
  const double elapsed = (double)(stop_at - t0) / 1e9;

  qsort(g_lat_us, g_answers, sizeof *g_lat_us, by_value);
  qsort(g_svc_us, g_answers, sizeof *g_svc_us, by_value);
  for (char* c = g_sample; *c; ++c) { /* keep the JSON valid whatever the reply holds */
    if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) {
      *c = '?';
    }
  }
  static const char* const mode_names[] = {"agent", "http-keepalive", "http-close"};
  uint64_t errors = 0;
  printf("{\"mode\": \"%s\", \"pollers\": %d, \"rate\": %g, \"sources\": %d, \"seconds\": %.3f, "
         "\"sent\": %llu, \"answers\": %zu, \"answers_per_s\": %.1f, \"p50_us\": %u, "
         "\"p99_us\": %u, \"p999_us\": %u, \"max_us\": %u, \"sent_p50_us\": %u, "
         "\"sent_p99_us\": %u, \"sent_p999_us\": %u, \"sent_max_us\": %u, \"errors\": {",
         mode_names[g_mode], pollers, rate, g_source_count, elapsed, (unsigned long long)g_sent,
         g_answers, (double)g_answers / elapsed, percentile(g_lat_us, 0.50),
         percentile(g_lat_us, 0.99), percentile(g_lat_us, 0.999), percentile(g_lat_us, 1.0),
         percentile(g_svc_us, 0.50), percentile(g_svc_us, 0.99), percentile(g_svc_us, 0.999),
         percentile(g_svc_us, 1.0));
  for (int k = 0; k < E_COUNT; ++k) {
    printf("%s\"%s\": %llu", k ? ", " : "", k_err_names[k], (unsigned long long)g_errors[k]);
    errors += g_errors[k];
  }
  printf("}, \"error_total\": %llu, \"idle_closes\": %llu, \"late_sends\": %llu, "
         "\"send_lag_max_us\": %lld, \"sample\": \"%s\"}\n",
         (unsigned long long)errors, (unsigned long long)g_idle_closes,
         (unsigned long long)g_late_sends, (long long)(g_send_lag_max / 1000), g_sample);
  return 0;
}
