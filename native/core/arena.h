// The process's shared arena: one sparse memfd, sealed at its size and mapped once, from which
// the buffer pool hands out its larger blocks (allocBuffer, mailbox.post(size), joined puts).
// A same-host peer that may read this process's memory anyway (it read the shm probe word with
// process_vm_readv) is given the memfd and maps it read-only; a put from arena memory then
// reaches it as an address inside that mapping, and it copies the bytes with one memcpy
// instead of pulling them through the kernel page by page (5-6 GB/s from 4 KiB pages, where
// a memcpy of the same pages runs at 20 GB/s and more).
//
// Blocks are page multiples, those of 2 MiB or more on 2 MiB boundaries. A block given back is
// kept as it is for the next block of its size, up to kKeptBytes: its pages stay in memory, as
// malloc keeps freed memory, because faulting in a fresh block costs more than copying into it
// (4 KiB shared pages: a fault each). Past that, blocks are punched out of the memfd: their
// memory returns to the system, and whatever maps them reads zeros there, never a fault (the
// memfd cannot shrink: it is sealed).
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

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
  // From this size on a block wants huge pages (transparent, on 2 MiB boundaries).
  static constexpr uint64_t kHugeBytes = 2ull << 20;
  // Whether a block of `bytes` belongs in the arena: from kMinBlockBytes on, and from
  // kHugeBytes on only where the kernel gives shared memory huge pages (shmem_enabled other than
  // never or deny). Without them a large block is better private memory of huge pages, which a
  // peer pulls with process_vm_readv about as fast as it copies shared 4 KiB pages, and faster
  // once the machine's memory is fragmented (measured by bench:shm: 16.7 against 12.4 GB/s).
  static bool suits(uint64_t bytes);
  static constexpr uint64_t kSpanBytes = 16ull << 30;
  static constexpr uint64_t kKeptBytes = 256ull << 20;

  // `bytes` (a page multiple) at an `align` boundary; nullptr when the limit or the room left
  // does not allow it, or the memfd cannot be made. *zeroed: whether it is all zeros (a block
  // given back and kept holds what it held).
  void* take(uint64_t bytes, uint64_t align, bool* zeroed);
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
  // Takes a kept block of `bytes` aligned to `align` (with mu_ held); 0 if there is none.
  uint64_t takeKept(uint64_t bytes, uint64_t align);
  // Punches blocks kept beyond kKeptBytes and frees their ranges (takes mu_).
  void trimKept();
  void release(uint64_t offset, uint64_t bytes);  // into free_, coalesced; with mu_ held

  std::map<uint64_t, uint64_t> free_;    // offset -> length, coalesced; punched (reads zeros)
  std::map<uint64_t, std::vector<uint64_t>> kept_;  // length -> offsets of blocks given back, not punched
  uint64_t keptBytes_ = 0;
  uint64_t used_ = 0;
  uint64_t limit_ = kSpanBytes;
};

}  // namespace rvma
