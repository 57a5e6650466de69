/*
 * Single-thread memcpy baseline for the shared-memory benchmark: what one CPU copies per second.
 *
 *   memcpybench SIZE COUNT WARMUP [malloc|huge]
 *       Copies SIZE bytes from one buffer into another, WARMUP untimed times, then COUNT timed
 *       times, and prints {"size":S,"ops":N,"bytes":B,"elapsedNs":T,"gbPerSecond":G} (GB = 1e9).
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
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: memcpybench SIZE COUNT WARMUP [malloc|huge]\n");
    return 2;
  }
  size_t size = strtoull(argv[1], NULL, 10);
  uint64_t count = strtoull(argv[2], NULL, 10);
  uint64_t warmup = strtoull(argv[3], NULL, 10);
  if (size == 0 || count == 0) {
    fprintf(stderr, "memcpybench: SIZE and COUNT must be positive\n");
    return 2;
  }
  const size_t huge = (size_t)2 << 20;
  const int hugeSource = argc == 5 && strcmp(argv[4], "huge") == 0;
  void *src_mem = NULL, *dst_mem = NULL;
  if (hugeSource ? posix_memalign(&src_mem, size >= huge ? huge : 4096, size) != 0 : !(src_mem = malloc(size))) {
    perror("malloc");
    return 1;
  }
  if (posix_memalign(&dst_mem, size >= huge ? huge : 4096, size) != 0) {
    perror("malloc");
    return 1;
  }
  char *src = src_mem, *dst = dst_mem;
  if (size >= huge) madvise(dst, size, MADV_HUGEPAGE);
  if (hugeSource && size >= huge) madvise(src, size, MADV_HUGEPAGE);
  memset(src, 0xa5, size);
  memset(dst, 0, size);

  for (uint64_t i = 0; i < warmup; i++) copy(dst, src, size);
  uint64_t start = now_ns();
  for (uint64_t i = 0; i < count; i++) copy(dst, src, size);
  uint64_t elapsed = now_ns() - start;
  if (dst[size - 1] != src[size - 1]) {
    fprintf(stderr, "memcpybench: the copy did not land\n");
    return 1;
  }
  double bytes = (double)size * (double)count;
  printf("{\"size\":%zu,\"ops\":%llu,\"bytes\":%.0f,\"elapsedNs\":%llu,\"gbPerSecond\":%.3f}\n", size,
         (unsigned long long)count, bytes, (unsigned long long)elapsed, bytes / (double)elapsed);
  free(src);
  free(dst);
  return 0;
}
