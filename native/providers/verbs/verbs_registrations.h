// Registrations of user memory: put and raw-write sources (read by peers), mailbox buffers
// (read into). Memory the JS side identified (PutRequest::memory, PostedBuffer::memory) stays
// registered after use, until that memory is collected (forget) or the cache needs room, so
// the next put, read or write from it needs no registration. Memory of unknown lifetime is
// registered per use and shared only by the operations using it at the same time: an idle
// registration could outlive it, and a new buffer at the same address would then be read or
// written through stale pages.
#pragma once
#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "verbs_resources.h"

namespace rvma::verbs {

// Read from JS while the progress context updates them.
struct RegistrationCounters {
  std::atomic<uint64_t> registered{0};  // ibv_reg_mr calls that succeeded
  std::atomic<uint64_t> reused{0};      // uses served by an existing registration
  std::atomic<uint64_t> evicted{0};     // idle registrations dropped for room
  std::atomic<uint64_t> cachedBytes{0}; // bytes of memory registered now
};

class RegistrationCache {
 public:
  struct Entry {
    MrPtr mr;
    uint64_t memory = 0;
    uintptr_t begin = 0, end = 0;
    uint32_t refs = 0;
    bool gone = false;  // its memory was collected while in use: dropped at the last release
    bool listed = false;               // unused and kept: in idle_, at `idle`
    std::list<Entry*>::iterator idle;
  };

  // idleBudget: bytes of unused registrations kept (0: none).
  RegistrationCache(ibv_pd* pd, uint64_t idleBudget, RegistrationCounters& counters)
      : pd_(pd), idleBudget_(idleBudget), counters_(counters) {}
  ~RegistrationCache() { clear(); }

  // A registration covering [addr, addr + len), held until release(). nullptr when the kernel
  // refuses even once idle registrations are dropped (usually the locked-memory limit; errno).
  Entry* acquire(const uint8_t* addr, uint64_t len, uint64_t memory);
  void release(Entry* e);
  // The memory was collected: nothing may reach it through a registration any more.
  void forget(uint64_t memory);
  void clear();

 private:
  Entry* find(uintptr_t begin, uintptr_t end, uint64_t memory);
  ibv_mr* registerRange(const uint8_t* addr, uint64_t len);
  void unlist(Entry* e);
  void drop(Entry* e);
  void trim(uint64_t budget);  // drops the least recently used idle entries beyond budget

  ibv_pd* pd_;
  uint64_t idleBudget_;
  RegistrationCounters& counters_;
  std::unordered_map<uint64_t, std::vector<std::unique_ptr<Entry>>> byMemory_;  // 0: unknown lifetime
  std::list<Entry*> idle_;  // least recently used first
  uint64_t idleBytes_ = 0;
};

}  // namespace rvma::verbs
