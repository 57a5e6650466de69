// Sender-side completion counters: a put may name one instead of being reported by itself.
// The provider's outcome bumps the counter's words in native memory that JS reads directly
// (32-byte slots in the completion words' pages, mapped into JS the same way); only failures and a
// counter reaching the level a waiter armed travel up as events.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "completion_words.h"
#include "status.h"

namespace rvma {

// Slot layout in 32-bit words (mirrored in src/mailbox/put-counter.ts):
//   w0-1 completed (u64)   w2-3 failed (u64)   w4-5 settledBelow (u64)   w7 seqlock
// settledBelow: every put with a lower index has settled (puts settle out of order across
// connections), so JS may let go of their memory.
struct CounterWords {
  static constexpr uint32_t kCompletedLo = 0, kFailedLo = 2, kSettledBelowLo = 4, kSeq = 7;
};

// A put id that names a counter: flag | slot << 32 | the put's index on it (mod 2^32). Plain
// put ids (JS's request numbers) stay far below the flag, and all of it fits a double.
struct CounterPutId {
  static constexpr uint64_t kFlag = 1ull << 52;
  static constexpr uint32_t kMaxSlots = 1u << 20;
  static bool is(uint64_t id) { return (id & kFlag) != 0; }
  static uint32_t slot(uint64_t id) { return uint32_t(id >> 32) & (kMaxSlots - 1); }
};

// Any thread: outcomes come from the progress context, allocation and arming from JS.
class PutCounters {
 public:
  // A fresh slot with its words zeroed; false when all kMaxSlots are taken.
  bool allocate(uint32_t* slot);
  // Reused only by a later allocate; the caller releases a slot once nothing can bump it.
  void release(uint32_t slot);
  std::shared_ptr<CompletionPage> page(uint32_t index);
  // Whether completed + failed already reached `level`; if not, the next outcome that makes
  // it so reports the slot (settle's *reached), once.
  bool arm(uint32_t slot, uint64_t level);
  // One put's outcome (index: its index on the counter, mod 2^32). *reached: a waiter's level
  // was reached now.
  void settle(uint32_t slot, uint32_t index, Status status, bool* reached);
  // A put that never reached the native side (JS counted its failure): settled, not counted.
  void skip(uint32_t slot, uint32_t index);

 private:
  struct State {
    uint64_t completed = 0, failed = 0;
    uint64_t armed = 0;  // 0: no waiter
    uint64_t settledBelow = 0;
    std::deque<uint8_t> settledAbove;  // for indices settledBelow + i: settled or not
    bool live = false;
  };
  // Marks index settled and moves settledBelow past every settled one.
  static void markSettled(State& s, uint32_t index);
  void publish(uint32_t slot, const State& s);
  uint32_t* words(uint32_t slot) { return pages_[slot / CompletionPage::kSlots]->slot(slot % CompletionPage::kSlots); }

  std::mutex mu_;
  std::vector<std::shared_ptr<CompletionPage>> pages_;
  std::vector<State> states_;
  std::vector<uint32_t> free_;
};

}  // namespace rvma
