// Per-mailbox completion words: 32-byte slots in 128 KiB pages of native memory that the
// addon maps into JS as external ArrayBuffers. JS reads them with Atomics.load, so the
// writer publishes with release stores under a seqlock (see write()).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace rvma {

// Slot layout in 32-bit words (the TS side mirrors it in src/mailbox/completion-words.ts):
//   w0 epoch (completed epochs, low 32 bits)   w1 bufferIndex (low 32 bits)
//   w2-3 bytes (u64)   w4-5 ops (u64)   w6 reserved   w7 seqlock (odd while writing)
struct SlotWords {
  static constexpr uint32_t kWords = 8;
  static constexpr uint32_t kBytes = kWords * 4;
  static constexpr uint32_t kEpoch = 0, kBufferIndex = 1, kBytesLo = 2, kOpsLo = 4, kSeq = 7;
};

class CompletionPage {
 public:
  static constexpr uint32_t kSlots = 4096;
  static constexpr uint32_t kBytes = kSlots * SlotWords::kBytes;
  CompletionPage();
  ~CompletionPage();
  CompletionPage(const CompletionPage&) = delete;
  CompletionPage& operator=(const CompletionPage&) = delete;
  uint32_t* slot(uint32_t i) { return words_ + i * SlotWords::kWords; }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(words_); }

 private:
  uint32_t* words_;
};

// Hands out slots; pages stay alive while the table or a JS view holds them (shared_ptr).
class CompletionWords {
 public:
  uint32_t allocate();  // slot number; its words are zeroed
  void release(uint32_t slot);
  uint32_t* words(uint32_t slot) { return pages_[slot / CompletionPage::kSlots]->slot(slot % CompletionPage::kSlots); }
  std::shared_ptr<CompletionPage> page(uint32_t index) const;
  size_t pageCount() const { return pages_.size(); }

  // Publishes a completion: readers that see an even, unchanged seq saw a whole record.
  static void write(uint32_t* w, uint64_t epoch, uint64_t bufferIndex, uint64_t bytes, uint64_t ops);

 private:
  std::vector<std::shared_ptr<CompletionPage>> pages_;
  std::vector<uint32_t> free_;
  uint32_t next_ = 0;
};

}  // namespace rvma
