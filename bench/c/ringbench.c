/*
 * Plain-socket baseline for the ring benchmark: one process per rank of a 3-rank TCP ring, the
 * way LEAP's C++ TcpTransport moves its frames (TCP_NODELAY, header and payload in one writev,
 * blocking reads).
 *
 *   ringbench forward HEADER DATA
 *       Ranks 1 and 2: pass every frame from the previous rank on to the next one until EOF,
 *       then print {"frames":N,"cpuNs":C,"wakeups":W} (W: voluntary context switches, all threads).
 *   ringbench origin HEADER DATA hop|frames COUNT WARMUP WINDOW
 *       Rank 0: sends WARMUP untimed frames, then COUNT timed ones, checks each one that comes
 *       back, and prints one JSON line.
 *       hop:    one frame around the ring at a time, per-op time a round trip / 3 (median, p99).
 *       frames: up to WINDOW frames in flight, frames back over total time.
 *
 * Startup: every rank listens on 127.0.0.1 (any free port) and prints "PORT <n>", then reads the
 * next rank's port as one line on stdin, connects to it and accepts the previous rank. Listening
 * before anyone connects means the launcher can start all three at once.
 *
 * Frame: HEADER bytes { u32 pos, u32 flags, ... } (host order; all ranks are on one host), then
 * DATA bytes of float32 payload.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "sockio.h"

#define RANKS 3

static void fail(const char *message) {
  fprintf(stderr, "ringbench: %s\n", message);
  exit(1);
}

/* User + system time of every thread of this process. */
static uint64_t cpu_ns(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) die("getrusage");
  uint64_t us = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000ull +
                (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  return us * 1000ull;
}

/* Voluntary context switches of every thread of this process: its sleeps, so its wake-ups. */
static uint64_t wakeups(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) die("getrusage");
  return (uint64_t)ru.ru_nvcsw;
}

static size_t header_bytes, data_bytes;

static int recv_frame(int fd, char *header, char *data) {
  if (!read_full(fd, header, header_bytes)) return 0;
  if (!read_full(fd, data, data_bytes)) fail("peer closed between header and payload");
  return 1;
}

static void send_frame(int fd, char *header, char *data) {
  struct iovec iov[2] = {{header, header_bytes}, {data, data_bytes}};
  write_full(fd, iov, 2);
}

/* The ring's two sockets: to the next rank and from the previous one. */
struct links {
  int next, prev;
};

static struct links join_ring(void) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) die("socket");
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(lfd, 1) != 0) die("bind/listen");
  socklen_t alen = sizeof addr;
  if (getsockname(lfd, (struct sockaddr *)&addr, &alen) != 0) die("getsockname");
  printf("PORT %d\n", ntohs(addr.sin_port));
  fflush(stdout);

  char line[32];
  if (!fgets(line, sizeof line, stdin)) fail("no next port on stdin");
  int port = atoi(line);
  if (port <= 0 || port > 65535) fail("bad next port on stdin");

  struct links l;
  l.next = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l.next < 0) die("socket");
  nodelay(l.next);
  addr.sin_port = htons((uint16_t)port);
  /* Completes in the next rank's backlog: it need not have reached accept() yet. */
  if (connect(l.next, (struct sockaddr *)&addr, sizeof addr) != 0) die("connect");
  l.prev = accept(lfd, NULL, NULL);
  if (l.prev < 0) die("accept");
  nodelay(l.prev);
  close(lfd);
  return l;
}

static int forwarder(void) {
  struct links l = join_ring();
  char *header = malloc(header_bytes), *data = malloc(data_bytes);
  if (!header || !data) die("malloc");
  uint64_t cpu0 = cpu_ns(), woken0 = wakeups(), frames = 0;
  while (recv_frame(l.prev, header, data)) {
    send_frame(l.next, header, data);
    frames++;
  }
  uint64_t cpu = cpu_ns() - cpu0, woken = wakeups() - woken0;
  printf("{\"frames\":%llu,\"cpuNs\":%llu,\"wakeups\":%llu}\n", (unsigned long long)frames, (unsigned long long)cpu,
         (unsigned long long)woken);
  fflush(stdout);
  /* The next rank sees EOF in turn; rank 0 last, after the last forwarder is done. */
  close(l.next);
  close(l.prev);
  free(header);
  free(data);
  return 0;
}

/* Rank 0's frame: the same payload every time (LEAP sends activations), the position in the header. */
static char *out_header, *out_data, *in_header, *in_data;
static uint32_t next_pos;

static void stamp(uint32_t pos) {
  uint32_t fields[2] = {pos, 0}; /* pos, flags */
  memcpy(out_header, fields, sizeof fields);
}

/* A frame is back: its position must be the next one and its payload intact at both ends. */
static void check(uint32_t pos) {
  uint32_t got;
  memcpy(&got, in_header, sizeof got);
  if (got != pos || in_data[4] != out_data[4] || in_data[data_bytes - 1] != out_data[data_bytes - 1]) {
    fprintf(stderr, "ringbench: frame %u came back as pos %u, payload %s\n", pos, got,
            in_data[4] == out_data[4] && in_data[data_bytes - 1] == out_data[data_bytes - 1] ? "intact" : "changed");
    exit(1);
  }
}

static void recv_back(int fd, uint32_t pos) {
  if (!recv_frame(fd, in_header, in_data)) fail("ring closed with frames in flight");
  check(pos);
}

/* Stop and wait: one frame out, the same frame back; the round trip in ns. */
static uint64_t hop_once(const struct links *l) {
  uint32_t pos = next_pos++;
  uint64_t t0 = now_ns();
  stamp(pos);
  send_frame(l->next, out_header, out_data);
  recv_back(l->prev, pos);
  return now_ns() - t0;
}

/*
 * Pipelined: a second thread sends while this one receives. With blocking writes on one thread,
 * rank 0 would stop reading while its writev waits for room, and once the three links' socket
 * buffers hold less than the window the ring would deadlock.
 */
struct pump {
  const struct links *l;
  uint32_t first;
  uint64_t count, window, back;
  pthread_mutex_t lock;
  pthread_cond_t room;
};

static void *pump_send(void *arg) {
  struct pump *p = arg;
  for (uint64_t sent = 0; sent < p->count; sent++) {
    pthread_mutex_lock(&p->lock);
    while (sent - p->back >= p->window) pthread_cond_wait(&p->room, &p->lock);
    pthread_mutex_unlock(&p->lock);
    stamp(p->first + (uint32_t)sent);
    send_frame(p->l->next, out_header, out_data);
  }
  return NULL;
}

static void pipeline(const struct links *l, uint64_t count, uint64_t window) {
  struct pump p = {l, next_pos, count, window, 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
  next_pos += (uint32_t)count;
  pthread_t sender;
  int err = pthread_create(&sender, NULL, pump_send, &p);
  if (err != 0) {
    errno = err;
    die("pthread_create");
  }
  for (uint64_t back = 0; back < count; back++) {
    recv_back(l->prev, p.first + (uint32_t)back);
    pthread_mutex_lock(&p.lock);
    p.back = back + 1;
    pthread_cond_signal(&p.room);
    pthread_mutex_unlock(&p.lock);
  }
  pthread_join(sender, NULL);
}

static int origin(int argc, char **argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: ringbench origin HEADER DATA hop|frames COUNT WARMUP WINDOW\n");
    return 2;
  }
  int hop = strcmp(argv[4], "hop") == 0;
  if (!hop && strcmp(argv[4], "frames") != 0) {
    fprintf(stderr, "ringbench: unknown scenario %s\n", argv[4]);
    return 2;
  }
  uint64_t count = strtoull(argv[5], NULL, 10);
  uint64_t warmup = strtoull(argv[6], NULL, 10);
  uint64_t window = strtoull(argv[7], NULL, 10);
  if (count == 0 || window == 0) {
    fprintf(stderr, "ringbench: COUNT and WINDOW must be positive\n");
    return 2;
  }

  out_header = calloc(1, header_bytes);
  in_header = malloc(header_bytes);
  out_data = calloc(1, data_bytes);
  in_data = malloc(data_bytes);
  if (!out_header || !in_header || !out_data || !in_data) die("malloc");
  float *values = (float *)(void *)out_data;
  for (size_t i = 0; i < data_bytes / sizeof(float); i++) values[i] = (float)i * 0.5f;

  struct links l = join_ring();
  uint64_t cpu0 = cpu_ns(), woken0 = wakeups();
  if (hop) {
    for (uint64_t i = 0; i < warmup; i++) hop_once(&l);
    uint64_t *times = malloc(count * sizeof *times);
    if (!times) die("malloc");
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < count; i++) times[i] = hop_once(&l);
    uint64_t elapsed = now_ns() - start;
    uint64_t cpu = cpu_ns() - cpu0, woken = wakeups() - woken0;
    qsort(times, count, sizeof *times, cmp_u64);
    uint64_t median = times[count / 2], p99 = times[count * 99 / 100];
    printf("{\"ops\":%llu,\"bytes\":%llu,\"elapsedNs\":%llu,\"medianOpNs\":%.1f,\"p99OpNs\":%.1f,\"senderCpuNs\":%llu,"
           "\"senderWakeups\":%llu,\"reported\":{\"roundTripMedianNs\":%llu,\"roundTripP99Ns\":%llu}}\n",
           (unsigned long long)count, (unsigned long long)(count * (header_bytes + data_bytes)),
           (unsigned long long)elapsed, (double)median / RANKS, (double)p99 / RANKS, (unsigned long long)cpu,
           (unsigned long long)woken, (unsigned long long)median, (unsigned long long)p99);
    free(times);
  } else {
    pipeline(&l, warmup, window);
    uint64_t start = now_ns();
    pipeline(&l, count, window);
    uint64_t elapsed = now_ns() - start;
    uint64_t cpu = cpu_ns() - cpu0, woken = wakeups() - woken0;
    printf("{\"ops\":%llu,\"bytes\":%llu,\"elapsedNs\":%llu,\"senderCpuNs\":%llu,\"senderWakeups\":%llu}\n",
           (unsigned long long)count, (unsigned long long)(count * (header_bytes + data_bytes)), (unsigned long long)elapsed,
           (unsigned long long)cpu, (unsigned long long)woken);
  }
  fflush(stdout);

  /* EOF down the ring; it comes back once both forwarders have printed and closed. */
  if (shutdown(l.next, SHUT_WR) != 0) die("shutdown");
  if (recv_frame(l.prev, in_header, in_data)) fail("a frame came back after the last one");
  close(l.next);
  close(l.prev);
  return 0;
}

int main(int argc, char **argv) {
  /* A peer gone: writev fails with EPIPE and says so, instead of a silent SIGPIPE. */
  signal(SIGPIPE, SIG_IGN);
  if (argc >= 4 && (strcmp(argv[1], "forward") == 0 || strcmp(argv[1], "origin") == 0)) {
    header_bytes = strtoul(argv[2], NULL, 10);
    data_bytes = strtoul(argv[3], NULL, 10);
    /* The header carries pos and flags; check() reads payload byte 4. */
    if (header_bytes < 8 || data_bytes < 8) {
      fprintf(stderr, "ringbench: HEADER and DATA must be at least 8 bytes\n");
      return 2;
    }
    if (strcmp(argv[1], "origin") == 0) return origin(argc, argv);
    if (argc != 4) {
      fprintf(stderr, "usage: ringbench forward HEADER DATA\n");
      return 2;
    }
    return forwarder();
  }
  fprintf(stderr, "usage: ringbench forward HEADER DATA | ringbench origin HEADER DATA hop|frames COUNT WARMUP WINDOW\n");
  return 2;
}
