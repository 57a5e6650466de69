// The memory behind allocBuffer: zeroed, page-aligned blocks, kept for reuse once JS lets go of
// them. Fresh pages cost a fault each on first touch (about 17 µs per 4 KiB page in the VMs
// this was measured on: a fresh 1 MiB buffer took 4.5 ms, a reused one the memset), and a
// receiver that allocates a buffer per message pays that on every message otherwise.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace rvma::addon {

struct BufferPoolStats {
  uint64_t pooledBytes;  // held for reuse now
  uint64_t limitBytes;   // most held for reuse
  uint64_t reused;       // blocks handed out again
  uint64_t fresh;        // blocks taken from the system
  uint64_t returned;     // blocks JS let go of (kept or freed)
};

class BufferPool {
 public:
  // The process's pool (one for every JS thread: a block may be freed on another thread).
  static BufferPool& shared();

  // A block of at least `size` bytes (its capacity: capacityFor(size)), its first `size` bytes
  // zeroed unless `zeroed` is false (then they hold whatever they held); nullptr when out of memory.
  void* take(size_t size, bool zeroed);
  // A block from take(size) that JS no longer reaches: kept, or freed beyond the limit.
  void give(void* block, size_t size);

  void setLimit(uint64_t bytes);  // frees what is held beyond it
  BufferPoolStats stats();

  // Blocks are kept by capacity: pages, or 2 MiB units from 2 MiB on (huge-page backed).
  static size_t capacityFor(size_t size);

 private:
  void trimTo(uint64_t bytes);  // with mu_ held
  static void release(void* block, size_t capacity);  // to the arena or the system

  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // by capacity
  uint64_t pooled_ = 0;
  uint64_t limit_ = uint64_t(64) << 20;
  uint64_t reused_ = 0;
  uint64_t fresh_ = 0;
  uint64_t returned_ = 0;
};

}  // namespace rvma::addon
