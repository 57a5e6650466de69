#include "completion_words.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace rvma {

CompletionPage::CompletionPage() {
  void* mem = nullptr;
  if (posix_memalign(&mem, 4096, kBytes) != 0) throw std::bad_alloc();
  std::memset(mem, 0, kBytes);
  words_ = static_cast<uint32_t*>(mem);
}

CompletionPage::~CompletionPage() { std::free(words_); }

uint32_t CompletionWords::allocate() {
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = next_++;
    if (slot / CompletionPage::kSlots >= pages_.size()) pages_.push_back(std::make_shared<CompletionPage>());
  }
  uint32_t* w = words(slot);
  for (uint32_t i = 0; i < SlotWords::kWords; i++) __atomic_store_n(&w[i], 0u, __ATOMIC_RELAXED);
  return slot;
}

void CompletionWords::release(uint32_t slot) { free_.push_back(slot); }

std::shared_ptr<CompletionPage> CompletionWords::page(uint32_t index) const {
  return index < pages_.size() ? pages_[index] : nullptr;
}

void CompletionWords::write(uint32_t* w, uint64_t epoch, uint64_t bufferIndex, uint64_t bytes, uint64_t ops) {
  uint32_t seq = __atomic_load_n(&w[SlotWords::kSeq], __ATOMIC_RELAXED);
  __atomic_store_n(&w[SlotWords::kSeq], seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&w[SlotWords::kBufferIndex], static_cast<uint32_t>(bufferIndex), __ATOMIC_RELAXED);
  __atomic_store_n(&w[SlotWords::kBytesLo], static_cast<uint32_t>(bytes), __ATOMIC_RELAXED);
  __atomic_store_n(&w[SlotWords::kBytesLo + 1], static_cast<uint32_t>(bytes >> 32), __ATOMIC_RELAXED);
  __atomic_store_n(&w[SlotWords::kOpsLo], static_cast<uint32_t>(ops), __ATOMIC_RELAXED);
  __atomic_store_n(&w[SlotWords::kOpsLo + 1], static_cast<uint32_t>(ops >> 32), __ATOMIC_RELAXED);
  __atomic_store_n(&w[SlotWords::kEpoch], static_cast<uint32_t>(epoch), __ATOMIC_RELEASE);
  __atomic_store_n(&w[SlotWords::kSeq], seq + 2, __ATOMIC_RELEASE);
}

}  // namespace rvma
