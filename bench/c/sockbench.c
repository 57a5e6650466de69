/*
 * Plain-socket baseline for the TCP benchmark: length-prefixed messages, one small ack per
 * message, a window of messages in flight. The same protocol the Node net.Socket variant uses.
 *
 *   sockbench recv
 *       Listens on 127.0.0.1 (any free port), prints "PORT <n>", serves one connection until
 *       EOF, then prints {"messages":N,"bytes":B}.
 *   sockbench send HOST PORT rtt|bw SIZE COUNT WARMUP WINDOW
 *       Sends WARMUP untimed messages, then COUNT timed ones, and prints one JSON line.
 *       rtt: one message at a time, per-message times (median, p99).
 *       bw:  up to WINDOW messages in flight, total bytes over total time.
 *
 * Frame: u32 payload length, u32 sequence (host order; both ends are on one host).
 * Ack:   u32 sequence, u32 status (0).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "sockio.h"

static int receiver(void) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) die("socket");
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(lfd, 1) != 0) die("bind/listen");
  socklen_t alen = sizeof addr;
  getsockname(lfd, (struct sockaddr *)&addr, &alen);
  printf("PORT %d\n", ntohs(addr.sin_port));
  fflush(stdout);

  int fd = accept(lfd, NULL, NULL);
  if (fd < 0) die("accept");
  close(lfd);
  nodelay(fd);

  char *buf = NULL;
  size_t cap = 0;
  uint64_t messages = 0, bytes = 0;
  for (;;) {
    uint32_t hdr[2];
    if (!read_full(fd, hdr, sizeof hdr)) break;
    if (hdr[0] > cap) {
      free(buf);
      cap = hdr[0];
      buf = malloc(cap);
      if (!buf) die("malloc");
    }
    if (hdr[0] > 0 && !read_full(fd, buf, hdr[0])) {
      fprintf(stderr, "sockbench: peer closed mid-message\n");
      return 1;
    }
    uint32_t ack[2] = {hdr[1], 0};
    struct iovec iov = {ack, sizeof ack};
    write_full(fd, &iov, 1);
    messages++;
    bytes += hdr[0];
  }
  printf("{\"messages\":%llu,\"bytes\":%llu}\n", (unsigned long long)messages, (unsigned long long)bytes);
  close(fd);
  free(buf);
  return 0;
}

static uint32_t seq_out, seq_in;

static void send_msg(int fd, const char *payload, uint32_t size) {
  uint32_t hdr[2] = {size, seq_out++};
  struct iovec iov[2] = {{hdr, sizeof hdr}, {(void *)payload, size}};
  write_full(fd, iov, size ? 2 : 1);
}

static void read_ack(int fd) {
  uint32_t ack[2];
  if (!read_full(fd, ack, sizeof ack)) {
    fprintf(stderr, "sockbench: receiver closed\n");
    exit(1);
  }
  if (ack[0] != seq_in++ || ack[1] != 0) {
    fprintf(stderr, "sockbench: unexpected ack %u (status %u)\n", ack[0], ack[1]);
    exit(1);
  }
}

/* Up to window messages in flight: send while the window allows, else wait for an ack. */
static void windowed(int fd, const char *payload, uint32_t size, uint64_t count, uint64_t window) {
  uint64_t sent = 0, acked = 0;
  while (acked < count) {
    if (sent < count && sent - acked < window) {
      send_msg(fd, payload, size);
      sent++;
    } else {
      read_ack(fd);
      acked++;
    }
  }
}

static int sender(int argc, char **argv) {
  if (argc != 9) {
    fprintf(stderr, "usage: sockbench send HOST PORT rtt|bw SIZE COUNT WARMUP WINDOW\n");
    return 2;
  }
  const char *host = argv[2];
  int port = atoi(argv[3]);
  int rtt = strcmp(argv[4], "rtt") == 0;
  uint32_t size = (uint32_t)strtoul(argv[5], NULL, 10);
  uint64_t count = strtoull(argv[6], NULL, 10);
  uint64_t warmup = strtoull(argv[7], NULL, 10);
  uint64_t window = strtoull(argv[8], NULL, 10);
  if (count == 0 || window == 0) {
    fprintf(stderr, "sockbench: COUNT and WINDOW must be positive\n");
    return 2;
  }

  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  nodelay(fd);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
    fprintf(stderr, "sockbench: bad host %s\n", host);
    return 2;
  }
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) die("connect");

  char *payload = malloc(size ? size : 1);
  if (!payload) die("malloc");
  memset(payload, 0xa5, size);

  windowed(fd, payload, size, warmup, rtt ? 1 : window);
  if (rtt) {
    uint64_t *times = malloc(count * sizeof *times);
    if (!times) die("malloc");
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < count; i++) {
      uint64_t t0 = now_ns();
      send_msg(fd, payload, size);
      read_ack(fd);
      times[i] = now_ns() - t0;
    }
    uint64_t elapsed = now_ns() - start;
    qsort(times, count, sizeof *times, cmp_u64);
    printf("{\"ops\":%llu,\"bytes\":%llu,\"elapsedNs\":%llu,\"medianOpNs\":%llu,\"p99OpNs\":%llu}\n",
           (unsigned long long)count, (unsigned long long)(count * size), (unsigned long long)elapsed,
           (unsigned long long)times[count / 2], (unsigned long long)times[count * 99 / 100]);
    free(times);
  } else {
    uint64_t start = now_ns();
    windowed(fd, payload, size, count, window);
    uint64_t elapsed = now_ns() - start;
    printf("{\"ops\":%llu,\"bytes\":%llu,\"elapsedNs\":%llu}\n", (unsigned long long)count,
           (unsigned long long)(count * size), (unsigned long long)elapsed);
  }
  close(fd);
  free(payload);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "recv") == 0) return receiver();
  if (argc >= 2 && strcmp(argv[1], "send") == 0) return sender(argc, argv);
  fprintf(stderr, "usage: sockbench recv | sockbench send HOST PORT rtt|bw SIZE COUNT WARMUP WINDOW\n");
  return 2;
}
