/*
 * Single-thread memcpy baseline for the shared-memory benchmark: what one CPU copies per second.
 *
 *   memcpybench SIZE COUNT WARMUP [malloc|huge] [SOURCES DESTINATIONS]
 *       Copies SIZE bytes from one buffer into another, WARMUP untimed times, then COUNT timed
 *       times, and prints {"size":S,"ops":N,"bytes":B,"elapsedNs":T,"gbPerSecond":G} (GB = 1e9).
 *       With SOURCES and DESTINATIONS, copy i goes from source i % SOURCES into destination
 *       i % DESTINATIONS: the working set of a transfer with SOURCES puts in flight into that many
 *       posted buffers, which leaves a CPU's cache where one pair of 1 MiB buffers stays in it.
 *
 * Both buffers are written before the warm-up, so every page is mapped and the destination is
 * as warm as a re-posted mailbox buffer: the copy is timed, not page faults. The source is plain
 * malloc memory, like the sender's Buffer ('malloc', the default), or allocated like allocBuffer()
 * memory ('huge'); the destination is allocated like a posted mailbox buffer
 * (native/addon/module.cpp, allocBuffer): from 2 MiB on, 2 MiB aligned, MADV_HUGEPAGE.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_BUFFERS 64

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Each copy must happen: the compiler may not drop or merge copies into memory it can see. */
static void copy(char *dst, const char *src, size_t size) {
  memcpy(dst, src, size);
  __asm__ volatile("" : : "r"(dst) : "memory");
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5 && argc != 7) {
    fprintf(stderr, "usage: memcpybench SIZE COUNT WARMUP [malloc|huge] [SOURCES DESTINATIONS]\n");
    return 2;
  }
  size_t size = strtoull(argv[1], NULL, 10);
  uint64_t count = strtoull(argv[2], NULL, 10);
  uint64_t warmup = strtoull(argv[3], NULL, 10);
  const unsigned sources = argc == 7 ? (unsigned)strtoul(argv[5], NULL, 10) : 1;
  const unsigned destinations = argc == 7 ? (unsigned)strtoul(argv[6], NULL, 10) : 1;
  if (size == 0 || count == 0 || sources == 0 || destinations == 0 || sources > MAX_BUFFERS ||
      destinations > MAX_BUFFERS) {
    fprintf(stderr, "memcpybench: SIZE and COUNT must be positive, SOURCES and DESTINATIONS 1..%d\n", MAX_BUFFERS);
    return 2;
  }
  const size_t huge = (size_t)2 << 20;
  const int hugeSource = argc >= 5 && strcmp(argv[4], "huge") == 0;
  char *src[MAX_BUFFERS], *dst[MAX_BUFFERS];
  for (unsigned i = 0; i < sources; i++) {
    void *mem = NULL;
    if (hugeSource ? posix_memalign(&mem, size >= huge ? huge : 4096, size) != 0 : !(mem = malloc(size))) {
      perror("malloc");
      return 1;
    }
    src[i] = mem;
    if (hugeSource && size >= huge) madvise(src[i], size, MADV_HUGEPAGE);
    memset(src[i], 0xa5, size);
  }
  for (unsigned i = 0; i < destinations; i++) {
    void *mem = NULL;
    if (posix_memalign(&mem, size >= huge ? huge : 4096, size) != 0) {
      perror("malloc");
      return 1;
    }
    dst[i] = mem;
    if (size >= huge) madvise(dst[i], size, MADV_HUGEPAGE);
    memset(dst[i], 0, size);
  }

  for (uint64_t i = 0; i < warmup; i++) copy(dst[i % destinations], src[i % sources], size);
  uint64_t start = now_ns();
  for (uint64_t i = 0; i < count; i++) copy(dst[i % destinations], src[i % sources], size);
  uint64_t elapsed = now_ns() - start;
  if (dst[0][size - 1] != src[0][size - 1]) {
    fprintf(stderr, "memcpybench: the copy did not land\n");
    return 1;
  }
  double bytes = (double)size * (double)count;
  printf("{\"size\":%zu,\"ops\":%llu,\"bytes\":%.0f,\"elapsedNs\":%llu,\"gbPerSecond\":%.3f}\n", size,
         (unsigned long long)count, bytes, (unsigned long long)elapsed, bytes / (double)elapsed);
  for (unsigned i = 0; i < sources; i++) free(src[i]);
  for (unsigned i = 0; i < destinations; i++) free(dst[i]);
  return 0;
}
