#include "ring_inbound.h"

#include <algorithm>
#include <climits>

#include "ring_frame.h"
#include "shared_u64.h"

namespace rvma::ring {

bool SlabLayout::fits(uint64_t len) const {
  if (slots == 0 || stride < kFrameHeaderBytes + frameBytes || stride > UINT32_MAX || wordsBytes % 8 != 0) return false;
  if (wordsBytes < 4ull * (kEntries + uint64_t(kEntryWords) * slots) || wordsBytes > len) return false;
  return stride <= (len - wordsBytes) / slots;
}

RingInbound::RingInbound(uint64_t vaddr, uint8_t* slab, const SlabLayout& layout,
                         std::function<void(const std::string&)> notify)
    : vaddr_(vaddr), slab_(slab), layout_(layout), notify_(std::move(notify)),
      nextAt_(layout.slots), out_(layout.slots, 0), granted_(layout.slots) {
  for (uint32_t p = 0; p < layout.slots; p++) nextAt_[p] = p;
  publishU64(words() + SlabLayout::kGranted, granted_);
}

Status RingInbound::start(MailboxTable& table) {
  for (uint32_t slot = 0; slot < layout_.slots; slot++) {
    uint64_t index;
    Status s = table.post(vaddr_, buffer(slot), layout_.stride, 1, 0, &index);
    if (!ok(s)) return s;
  }
  return Status::Ok;
}

void RingInbound::target(std::function<void(uint64_t)> sendCredit) {
  uint64_t due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sendCredit_ = std::move(sendCredit);
    due = creditDue();
  }
  send(due);
}

void RingInbound::sendDue(bool again) {
  uint64_t due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    due = creditDue(again);
  }
  send(due);
}

Status RingInbound::release(MailboxTable& table, uint32_t slot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (slot >= layout_.slots || !out_[slot] || broken_) return Status::Ok;
    out_[slot] = 0;
    released_++;
    maybeGrant();
  }
  // Outside mu_: a completion holds the table's lock while it takes mu_. Posted before the
  // credit goes, so that a frame sent on it finds the buffer.
  uint64_t index;
  Status s = table.post(vaddr_, buffer(slot), layout_.stride, 1, 0, &index);
  if (s == Status::NoMailbox) return Status::Ok;  // closed meanwhile: nothing more arrives
  if (!ok(s)) return s;
  sendDue();
  return s;
}

uint64_t RingInbound::creditDue(bool again) {
  __atomic_store_n(&words()[SlabLayout::kGrantDue], 0u, __ATOMIC_RELAXED);
  if (!sendCredit_ || broken_ || (granted_ <= sent_ && !again)) return 0;
  sent_ = granted_;
  __atomic_store_n(&words()[SlabLayout::kCreditsSent], ++creditsSent_, __ATOMIC_RELAXED);
  return granted_;
}

// Outside mu_ and the table's lock: a put may place into another endpoint's table (loopback).
void RingInbound::send(uint64_t total) {
  if (total) sendCredit_(total);
}

uint64_t RingInbound::received() const {
  std::lock_guard<std::mutex> lock(mu_);
  return received_;
}

void RingInbound::completed(const CompletionRecord& r) {
  std::string why;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) return;
    const uint64_t at = uint64_t(r.data - buffer(0));
    if (r.data < buffer(0) || at % layout_.stride != 0 || at / layout_.stride >= layout_.slots) {
      why = "a frame landed outside the ring's buffers";  // cannot happen: only ours are posted
    } else {
      why = accept(uint32_t(at / layout_.stride), r.bytes);
    }
    broken_ = !why.empty();
  }
  wake(why);
}

std::string RingInbound::accept(uint32_t slot, uint64_t bytes) {
  FrameHeader h;
  std::string why = decodeFrameHeader(buffer(slot), bytes, &h);
  if (!why.empty()) return "ring frame: " + why;
  const uint64_t p = h.seq % layout_.slots;
  if (h.seq < released_ || h.seq - released_ >= layout_.slots) {
    return "ring frame: sequence number " + std::to_string(h.seq) + " outside the window [" + std::to_string(released_) +
           ", " + std::to_string(released_ + layout_.slots) + ")";
  }
  // In the window, a position's next number is this one, or the one after it when it is here.
  if (nextAt_[p] != h.seq) return "ring frame: sequence number " + std::to_string(h.seq) + " arrived twice";
  nextAt_[p] = h.seq + layout_.slots;
  out_[slot] = 1;
  received_++;
  __atomic_store_n(&words()[SlabLayout::kReceived], uint32_t(received_), __ATOMIC_RELAXED);
  uint32_t* entry = words() + SlabLayout::kEntries + SlabLayout::kEntryWords * p;
  entry[1] = slot;
  entry[2] = uint32_t(bytes);
  entry[3] = h.headerLen;
  __atomic_store_n(&entry[0], uint32_t(h.seq / layout_.slots + 1), __ATOMIC_RELEASE);
  maybeGrant();
  // Under the table's lock, where no put may be made: JS sends it (sendDue).
  if (granted_ > sent_ && sendCredit_) __atomic_store_n(&words()[SlabLayout::kGrantDue], 1u, __ATOMIC_RELAXED);
  return std::string();
}

// Credits go back in batches of half the slots, and at once when the sender has used every
// credit it holds (so it never waits on a batch that cannot fill).
void RingInbound::maybeGrant() {
  const uint64_t allowed = layout_.slots + released_;
  if (allowed == granted_) return;
  if (allowed - granted_ >= std::max<uint64_t>(1, layout_.slots >> 1) || received_ == granted_) {
    granted_ = allowed;
    publishU64(words() + SlabLayout::kGranted, granted_);
  }
}

// One Notify per batch: the next goes only once JS has taken this one back.
void RingInbound::wake(const std::string& text) {
  if (!text.empty()) return notify_(text);
  if (__atomic_exchange_n(&words()[SlabLayout::kNotify], 1u, __ATOMIC_ACQ_REL) == 0) notify_(text);
}

}  // namespace rvma::ring
