#include "buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "../core/arena.h"

namespace rvma::addon {
namespace {

constexpr size_t kPage = 4096;
// Large blocks on 2 MiB boundaries, as transparent huge pages where the kernel leaves that to us
// (THP "madvise"): copies into a 16 MiB buffer of 4 KiB pages ran at a third of the speed (3.5
// against 11 GB/s here), from TLB misses.
constexpr size_t kHuge = size_t(2) << 20;
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels refuse it (EINVAL) and the memset faults
#endif

}  // namespace

void BufferPool::release(void* block, size_t capacity) {
  if (!Arena::shared().give(block, capacity)) std::free(block);
}

BufferPool& BufferPool::shared() {
  static BufferPool* pool = new BufferPool();  // never destroyed: finalizers may run at exit
  return *pool;
}

size_t BufferPool::capacityFor(size_t size) {
  if (size == 0) return kPage;
  const size_t unit = size >= kHuge ? kHuge : kPage;
  return (size + unit - 1) / unit * unit;
}

void* BufferPool::take(size_t size, bool zeroed) {
  const size_t capacity = capacityFor(size);
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(capacity);
    if (it != free_.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      pooled_ -= capacity;
      reused_++;
    }
  }
  if (block) {
    if (zeroed) std::memset(block, 0, size);  // the rest of the capacity is never visible to JS
    return block;
  }
  // Larger blocks from the shared arena, where a same-host peer copies a put from them with one
  // memcpy. Past its limit, ordinary memory.
  const size_t align = capacity >= kHuge ? kHuge : kPage;
  bool clean = false;
  bool fromArena = Arena::suits(capacity) && (block = Arena::shared().take(capacity, align, &clean)) != nullptr;
  if (!fromArena && posix_memalign(&block, align, capacity) != 0) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fresh_++;  // counted once it exists: a failed allocation is no fresh buffer
  }
  // Shared memory gets huge pages only where the kernel's shmem_enabled allows it.
  if (capacity >= kHuge) madvise(block, capacity, MADV_HUGEPAGE);
  if (fromArena) {
    // A block the arena kept has its pages; a clean one is zeros, faulted in by one call.
    if (!clean) {
      if (zeroed) std::memset(block, 0, size);
    } else {
      madvise(block, capacity, MADV_POPULATE_WRITE);
    }
    return block;
  }
  // The pages are faulted in now rather than in a transfer, by one call where the kernel allows:
  // touching them one by one cost about 10 us a page on a VM here (a fresh 256 KiB in 600-800 us
  // by memset, 30-40 us by MADV_POPULATE_WRITE). The allocator may hand back used memory, so
  // zeroing still takes the memset.
  if (madvise(block, capacity, MADV_POPULATE_WRITE) != 0 || zeroed) std::memset(block, 0, size);
  return block;
}

void BufferPool::give(void* block, size_t size) {
  const size_t capacity = capacityFor(size);
  {
    std::lock_guard<std::mutex> lock(mu_);
    returned_++;
    if (pooled_ + capacity <= limit_) {
      free_[capacity].push_back(block);
      pooled_ += capacity;
      return;
    }
  }
  release(block, capacity);
}

void BufferPool::setLimit(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  limit_ = bytes;
  trimTo(bytes);
}

BufferPoolStats BufferPool::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return {pooled_, limit_, reused_, fresh_, returned_};
}

void BufferPool::trimTo(uint64_t bytes) {
  for (auto it = free_.begin(); it != free_.end() && pooled_ > bytes;) {
    auto& blocks = it->second;
    while (!blocks.empty() && pooled_ > bytes) {
      release(blocks.back(), it->first);
      blocks.pop_back();
      pooled_ -= it->first;
    }
    it = blocks.empty() ? free_.erase(it) : std::next(it);
  }
}

}  // namespace rvma::addon
