/*
 * What the C socket baselines share: errors, the clock, TCP_NODELAY, whole reads and writes, and
 * the comparison qsort needs for percentiles. Header-only: each baseline is one `cc` call.
 */
#ifndef RVMA_BENCH_SOCKIO_H
#define RVMA_BENCH_SOCKIO_H

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

static void die(const char *what) {
  perror(what);
  exit(1);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void nodelay(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) die("setsockopt TCP_NODELAY");
}

/* Reads exactly len bytes; 0 on a clean EOF before the first byte. */
static int read_full(int fd, void *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = recv(fd, (char *)buf + got, len - got, MSG_WAITALL);
    if (n == 0) {
      if (got == 0) return 0;
      fprintf(stderr, "peer closed mid-message\n");
      exit(1);
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      die("recv");
    }
    got += (size_t)n;
  }
  return 1;
}

static void write_full(int fd, struct iovec *iov, int cnt) {
  while (cnt > 0) {
    ssize_t n = writev(fd, iov, cnt);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("writev");
    }
    while (cnt > 0 && (size_t)n >= iov->iov_len) {
      n -= (ssize_t)iov->iov_len;
      iov++;
      cnt--;
    }
    if (cnt > 0) {
      iov->iov_base = (char *)iov->iov_base + n;
      iov->iov_len -= (size_t)n;
    }
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

#endif
