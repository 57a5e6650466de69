// A 64-bit count that JavaScript reads from shared memory while a progress thread may be
// writing it: three 32-bit words, a sequence word (odd while written) then the low and high
// halves. JS reads it as src/ring/slab.ts readSharedU64 does: again when the sequence word
// was odd or changed meanwhile. Writers are serialised by their owner's lock.
#pragma once
#include <cstdint>

namespace rvma::ring {

inline void publishU64(uint32_t* w, uint64_t value) {
  const uint32_t seq = __atomic_load_n(&w[0], __ATOMIC_RELAXED);
  __atomic_store_n(&w[0], seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&w[1], uint32_t(value), __ATOMIC_RELAXED);
  __atomic_store_n(&w[2], uint32_t(value >> 32), __ATOMIC_RELAXED);
  __atomic_store_n(&w[0], seq + 2, __ATOMIC_RELEASE);
}

}  // namespace rvma::ring
