// The credits a ring member's senders may use, received natively: credit records (ring_credit.h)
// land in a mailbox of their own whose buffers are recycled as they complete, are checked here
// (the right neighbour, the right direction), and the largest total per direction is published
// in words JS reads before each send. JS hears of a credit (a Notify event) only while a send
// of that direction waits for one.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "../core/completion_claim.h"
#include "../core/mailbox_table.h"
#include "ring_credit.h"

namespace rvma::ring {

// The block JS shares (mirrored in src/ring/slab.ts), in 32-bit words from its start:
//   w0 records taken (mod 2^32)   w1 records dropped (mod 2^32)
//   per direction d, 8 words at 8 + 8d: granted (a shared_u64.h count, 3 words), frameBytes,
//   waiting (JS sets it to 1 when a send waits; set back to 0 here, with a Notify, when a
//   credit comes)
// The mailbox's buffers follow from kBuffersAt on.
struct CreditsLayout {
  static constexpr uint32_t kTaken = 0, kDropped = 1, kDirs = 8, kDirWords = 8, kGranted = 0, kFrameBytes = 3, kWaiting = 4;
  static constexpr uint32_t kBuffersAt = 128, kBuffers = 16, kBufferBytes = 32;
  static constexpr uint64_t kBytes = kBuffersAt + uint64_t(kBuffers) * kBufferBytes;
};
static_assert(4 * (CreditsLayout::kDirs + 2 * CreditsLayout::kDirWords) <= CreditsLayout::kBuffersAt, "words overlap the buffers");

class RingCredits final : public CompletionClaim {
 public:
  RingCredits(uint64_t vaddr, uint8_t* block, std::function<void()> notify);
  // JS thread: posts the buffers (the mailbox recycles them from then on).
  Status start(MailboxTable& table);
  // JS thread: credits for `dir` count only from this node's instance whose ring mailboxes are
  // at `base`. Its credits that came before (a neighbour may complete the ring first) count now.
  void expect(Dir dir, const std::string& node, uint64_t base);
  void completed(const CompletionRecord& record) override;

  // Any thread: the frames `dir` may have sent in all, and the largest frame its receiver takes
  // (both 0 before its first credit). What JS reads from the words, for native senders.
  struct Grant {
    uint64_t total;
    uint32_t frameBytes;
  };
  Grant granted(Dir dir);

 private:
  uint32_t* words() { return reinterpret_cast<uint32_t*>(block_); }
  // Publishes a larger total for dir (mu_ held); true when a send waits for it.
  bool grant(const Credit& c);
  // Records taken (counted as credits) or dropped (mu_ held).
  void counted(bool taken, uint32_t records);
  // Credits that came before expect(): the largest per sender and instance, a few at most (the
  // neighbours). Only an optimisation: the receiver sends its credits again when it hears that
  // this member's ring is complete (Kind.Joined), so one crowded out by others still comes.
  struct Early {
    std::string sender;
    Credit credit;
    uint32_t records;
  };
  static constexpr size_t kEarlySenders = 8;

  const uint64_t vaddr_;
  uint8_t* const block_;
  const std::function<void()> notify_;
  std::mutex mu_;
  std::string from_[2];
  uint64_t fromBase_[2] = {0, 0};
  std::vector<Early> early_[2];
  uint64_t granted_[2] = {0, 0};
  uint32_t frameBytes_[2] = {0, 0};
  uint32_t taken_ = 0, dropped_ = 0;
};

}  // namespace rvma::ring
