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

void PutCounters::settle(uint32_t slot, uint32_t index, Status status, bool* reached) {
  *reached = false;
  std::lock_guard<std::mutex> lock(mu_);
  // A released slot: its counter is gone and nobody reads its words.
  if (slot >= states_.size() || !states_[slot].live) return;
  State& s = states_[slot];
  (ok(status) ? s.completed : s.failed)++;
  markSettled(s, index);
  publish(slot, s);
  if (s.armed && s.completed + s.failed >= s.armed) {
    s.armed = 0;
    *reached = true;
  }
}

void PutCounters::skip(uint32_t slot, uint32_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (slot >= states_.size() || !states_[slot].live) return;
  markSettled(states_[slot], index);
  publish(slot, states_[slot]);
}

void PutCounters::markSettled(State& s, uint32_t index) {
  // Indices travel mod 2^32; in flight they span far less than that. One further ahead than
  // kMaxTracked is not tracked (settledBelow then stays, and JS holds memory longer).
  constexpr uint32_t kMaxTracked = 1u << 24;
  const uint32_t ahead = index - uint32_t(s.settledBelow);
  if (ahead >= kMaxTracked) return;
  if (ahead >= s.settledAbove.size()) s.settledAbove.resize(size_t(ahead) + 1, 0);
  s.settledAbove[ahead] = 1;
  while (!s.settledAbove.empty() && s.settledAbove.front()) {
    s.settledAbove.pop_front();
    s.settledBelow++;
  }
}

// Seqlock, as in CompletionWords::write: a reader that sees an even, unchanged seq saw all words.
void PutCounters::publish(uint32_t slot, const State& s) {
  uint32_t* w = words(slot);
  uint32_t seq = __atomic_load_n(&w[CounterWords::kSeq], __ATOMIC_RELAXED);
  __atomic_store_n(&w[CounterWords::kSeq], seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  const uint64_t values[3] = {s.completed, s.failed, s.settledBelow};
  for (int i = 0; i < 3; i++) {
    __atomic_store_n(&w[2 * i], uint32_t(values[i]), __ATOMIC_RELAXED);
    __atomic_store_n(&w[2 * i + 1], uint32_t(values[i] >> 32), __ATOMIC_RELAXED);
  }
  __atomic_store_n(&w[CounterWords::kSeq], seq + 2, __ATOMIC_RELEASE);
}

}  // namespace rvma
