// One direction's receiving side of a ring, in native code: the frames land in `slots` buffers
// of one slab that JS shares, are checked against the window here, and are published as
// indices in the slab's words; JS reads them there and wakes once per batch (a Notify event),
// never once per completion. Released buffers are posted again from here, and the credits
// the sender may use are counted here too.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "../core/completion_claim.h"
#include "../core/mailbox_table.h"

namespace rvma::ring {

// Where things are in the slab (mirrored in src/ring/slab.ts). In 32-bit words from the start:
//   w0 notify: 1 once a Notify event was sent, until JS takes it back (Atomics.exchange to 0)
//   w1-3 granted: the credits the sender may have in all (a shared_u64.h count)
//   w4 received: frames arrived (mod 2^32)   w5 grantDue: 1 when an arrival made a credit due
//   that JS must have sent (sendDue())   w6 credit records sent (mod 2^32)
//   per position p = seq % slots, 4 words at 8 + 4p: tag (seq / slots + 1, mod 2^32, written
//   last), the buffer's slot, the frame's bytes, its header's bytes.
// Buffers follow from wordsBytes on, one every stride bytes.
struct SlabLayout {
  uint32_t slots;
  uint64_t frameBytes;  // the largest frame: header and data, without the ring header
  uint64_t stride;
  uint64_t wordsBytes;
  static constexpr uint32_t kNotify = 0, kGranted = 1, kReceived = 4, kGrantDue = 5, kCreditsSent = 6, kEntries = 8,
                            kEntryWords = 4;
  uint64_t bytes() const { return wordsBytes + stride * slots; }
  // Whether a slab of `len` bytes holds this layout.
  bool fits(uint64_t len) const;
};

class RingInbound final : public CompletionClaim {
 public:
  // notify(text): tell JS that frames arrived, or (text not empty) why the direction broke.
  RingInbound(uint64_t vaddr, uint8_t* slab, const SlabLayout& layout,
              std::function<void(const std::string&)> notify);

  // JS thread: posts every buffer.
  Status start(MailboxTable& table);
  // JS thread: how credits reach the sender; the first of them goes now.
  void target(std::function<void(uint64_t total)> sendCredit);
  // JS thread: a credit that came due on an arrival (grantDue) goes now; with `again`, the
  // credits granted so far go again even when they went already (the sender's ring has just
  // completed: what it received before may not have counted).
  void sendDue(bool again = false);
  // JS thread: the frame in buffer `slot` was released; its buffer goes back to the mailbox.
  // A slot not taken out (never arrived, or released already) is left alone. A credit that
  // comes due goes at once.
  Status release(MailboxTable& table, uint32_t slot);
  void completed(const CompletionRecord& record) override;

  uint64_t received() const;

 private:
  uint32_t* words() { return reinterpret_cast<uint32_t*>(slab_); }
  uint8_t* buffer(uint32_t slot) { return slab_ + layout_.wordsBytes + layout_.stride * slot; }
  // Why a frame of `bytes` in buffer `slot` may not be taken; "" when it may (mu_ held).
  std::string accept(uint32_t slot, uint64_t bytes);
  void maybeGrant();  // mu_ held
  // The credit to send now, if one is due (or `again`, if any was granted) (mu_ held); 0 if none.
  uint64_t creditDue(bool again = false);
  void send(uint64_t total);
  void wake(const std::string& text);

  const uint64_t vaddr_;
  uint8_t* const slab_;
  const SlabLayout layout_;
  const std::function<void(const std::string&)> notify_;
  mutable std::mutex mu_;
  // The sequence number each position takes next: p, p + slots, p + 2 slots...
  std::vector<uint64_t> nextAt_;
  std::vector<uint8_t> out_;  // per buffer slot: 1 while its frame is out of the mailbox
  std::function<void(uint64_t)> sendCredit_;
  uint64_t received_ = 0, released_ = 0, granted_ = 0, sent_ = 0;
  uint32_t creditsSent_ = 0;
  bool broken_ = false;
};

}  // namespace rvma::ring
