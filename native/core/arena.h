// The process's shared arena: one sparse memfd, sealed at its size and mapped once, from which
// the buffer pool hands out its larger blocks (allocBuffer, mailbox.post(size), joined puts).
// A same-host peer that may read this process's memory anyway (it read the shm probe word with
// process_vm_readv) is given the memfd and maps it read-only; a put from arena memory then
// reaches it as an address inside that mapping, and it copies the bytes with one memcpy
// instead of pulling them through the kernel page by page (5-6 GB/s from 4 KiB pages, where
// a memcpy of the same pages runs at 20 GB/s and more).
//
// Blocks are page multiples, those of 2 MiB or more on 2 MiB boundaries. A block given back
// is punched out of the memfd first: its memory returns to the system, and whatever maps it
// reads zeros there, never a fault (the memfd cannot shrink: it is sealed).
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>

namespace rvma {

struct ArenaStats {
  uint64_t usedBytes;   // in blocks handed out (and held by the buffer pool for reuse)
  uint64_t limitBytes;  // the most it hands out; blocks past it come from ordinary memory
  uint64_t spanBytes;   // the memfd's size: the mapping every peer makes of it
};

class Arena {
 public:
  // The process's arena, created on its first block (never destroyed: finalizers may run at exit).
  static Arena& shared();

  // Blocks smaller than this stay in ordinary memory: a put that small travels inline anyway.
  static constexpr uint64_t kMinBlockBytes = 64ull << 10;
  static constexpr uint64_t kSpanBytes = 16ull << 30;

  // `bytes` (a page multiple) at an `align` boundary, zeroed; nullptr when the limit or the
  // room left does not allow it, or the memfd cannot be made.
  void* take(uint64_t bytes, uint64_t align);
  // Gives back a block of take(): false when `block` is not the arena's.
  bool give(void* block, uint64_t bytes);

  // Whether [p, p + len) lies inside the arena.
  bool contains(const void* p, uint64_t len) const;
  // The memfd (sealed against shrinking and growing) and where it is mapped here; -1 and 0
  // before the first block.
  int fd() const { return fd_.load(std::memory_order_acquire); }
  uint64_t base() const { return base_.load(std::memory_order_acquire); }

  void setLimit(uint64_t bytes);
  ArenaStats stats();

 private:
  bool create();  // with mu_ held

  std::mutex mu_;
  std::atomic<int> fd_{-1};
  std::atomic<uint64_t> base_{0};
  bool failed_ = false;                  // the memfd could not be made: never try again
  std::map<uint64_t, uint64_t> free_;    // offset -> length, coalesced
  uint64_t used_ = 0;
  uint64_t limit_ = kSpanBytes;
};

}  // namespace rvma
