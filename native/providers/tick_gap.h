// Time a provider's periodic tick did not run. In loop progress the ticks run on the JS
// thread, so a long computation or a GC pause there (or the whole process being stopped)
// delays them; nothing of the peers was read meanwhile, so that time is nobody's silence.
// Timeouts that measure a peer's silence or a connection's setup give it back.
#pragma once
#include <algorithm>
#include <cstdint>

namespace rvma {

class TickGap {
 public:
  TickGap(uint32_t intervalMs, uint64_t startMs) : intervalMs_(intervalMs), lastMs_(startMs) {}

  // Called once per tick: how long this endpoint was not listening since the last tick (the
  // part of the gap beyond one interval, once the gap exceeds two), else 0.
  uint64_t missed(uint64_t nowMs) {
    const uint64_t gap = nowMs > lastMs_ ? nowMs - lastMs_ : 0;
    lastMs_ = nowMs;
    return gap > 2 * uint64_t(intervalMs_) ? gap - intervalMs_ : 0;
  }

  // A timestamp moved later by the time missed, never past now.
  static void credit(uint64_t* stampMs, uint64_t missedMs, uint64_t nowMs) {
    if (missedMs != 0) *stampMs = std::min(nowMs, *stampMs + missedMs);
  }

 private:
  uint32_t intervalMs_;
  uint64_t lastMs_;
};

}  // namespace rvma
