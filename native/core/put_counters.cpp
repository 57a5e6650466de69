#include "put_counters.h"

namespace rvma {

bool PutCounters::allocate(uint32_t* slot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!free_.empty()) {
    *slot = free_.back();
    free_.pop_back();
  } else {
    if (states_.size() >= CounterPutId::kMaxSlots) return false;
    *slot = uint32_t(states_.size());
    states_.emplace_back();
    if (*slot / CompletionPage::kSlots >= pages_.size()) pages_.push_back(std::make_shared<CompletionPage>());
  }
  states_[*slot] = State{};
  states_[*slot].live = true;
  uint32_t* w = words(*slot);
  for (uint32_t i = 0; i < SlotWords::kWords; i++) __atomic_store_n(&w[i], 0u, __ATOMIC_RELAXED);
  return true;
}

void PutCounters::release(uint32_t slot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (slot >= states_.size() || !states_[slot].live) return;
  states_[slot].live = false;
  free_.push_back(slot);
}

std::shared_ptr<CompletionPage> PutCounters::page(uint32_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  return index < pages_.size() ? pages_[index] : nullptr;
}

bool PutCounters::arm(uint32_t slot, uint64_t level) {
  std::lock_guard<std::mutex> lock(mu_);
  if (slot >= states_.size() || !states_[slot].live) return true;
  State& s = states_[slot];
  if (s.completed + s.failed >= level) return true;
  s.armed = level;
  return false;
}

void PutCounters::settle(uint32_t slot, Status status, bool* reached) {
  *reached = false;
  std::lock_guard<std::mutex> lock(mu_);
  // A released slot: its counter is gone and nobody reads its words.
  if (slot >= states_.size() || !states_[slot].live) return;
  State& s = states_[slot];
  (ok(status) ? s.completed : s.failed)++;
  // Seqlock, as in CompletionWords::write: a reader that sees an even, unchanged seq saw both counts.
  uint32_t* w = words(slot);
  uint32_t seq = __atomic_load_n(&w[CounterWords::kSeq], __ATOMIC_RELAXED);
  __atomic_store_n(&w[CounterWords::kSeq], seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&w[CounterWords::kCompletedLo], uint32_t(s.completed), __ATOMIC_RELAXED);
  __atomic_store_n(&w[CounterWords::kCompletedLo + 1], uint32_t(s.completed >> 32), __ATOMIC_RELAXED);
  __atomic_store_n(&w[CounterWords::kFailedLo], uint32_t(s.failed), __ATOMIC_RELAXED);
  __atomic_store_n(&w[CounterWords::kFailedLo + 1], uint32_t(s.failed >> 32), __ATOMIC_RELAXED);
  __atomic_store_n(&w[CounterWords::kSeq], seq + 2, __ATOMIC_RELEASE);
  if (s.armed && s.completed + s.failed >= s.armed) {
    s.armed = 0;
    *reached = true;
  }
}

}  // namespace rvma
