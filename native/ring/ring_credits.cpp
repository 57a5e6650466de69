#include "ring_credits.h"

#include <algorithm>

#include "shared_u64.h"

namespace rvma::ring {

RingCredits::RingCredits(uint64_t vaddr, uint8_t* block, std::function<void()> notify)
    : vaddr_(vaddr), block_(block), notify_(std::move(notify)) {}

Status RingCredits::start(MailboxTable& table) {
  for (uint32_t i = 0; i < CreditsLayout::kBuffers; i++) {
    uint64_t index;
    Status s = table.post(vaddr_, block_ + CreditsLayout::kBuffersAt + i * CreditsLayout::kBufferBytes,
                          CreditsLayout::kBufferBytes, 1, 0, &index);
    if (!ok(s)) return s;
  }
  return Status::Ok;
}

void RingCredits::expect(Dir dir, const std::string& node, uint64_t base) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    from_[uint8_t(dir)] = node;
    fromBase_[uint8_t(dir)] = base;
    for (const Early& e : early_[uint8_t(dir)]) {
      const bool ours = e.sender == node && e.credit.base == base;
      counted(ours, e.records);
      if (ours) wake = grant(e.credit) || wake;
    }
    early_[uint8_t(dir)].clear();
  }
  if (wake) notify_();
}

void RingCredits::completed(const CompletionRecord& r) {
  Credit c;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!decodeCredit(r.data, r.bytes, &c).empty()) return counted(false, 1);
    const std::string& from = from_[uint8_t(c.dir)];
    if (from.empty()) {
      // Before this member knows its neighbours: kept (the largest per instance) until expect().
      auto& early = early_[uint8_t(c.dir)];
      auto it = std::find_if(early.begin(), early.end(),
                             [&](const Early& e) { return e.sender == r.sender && e.credit.base == c.base; });
      if (it == early.end()) {
        if (early.size() == kEarlySenders) return counted(false, 1);
        early.push_back(Early{r.sender, c, 1});
      } else {
        if (c.total > it->credit.total) it->credit = c;
        it->records++;
      }
      return;
    }
    // From another node than the neighbour of that direction, or another instance of it: not a credit.
    if (r.sender != from || c.base != fromBase_[uint8_t(c.dir)]) return counted(false, 1);
    counted(true, 1);
    wake = grant(c);
  }
  if (wake) notify_();
}

void RingCredits::counted(bool taken, uint32_t records) {
  if (taken) __atomic_store_n(&words()[CreditsLayout::kTaken], taken_ += records, __ATOMIC_RELAXED);
  else __atomic_store_n(&words()[CreditsLayout::kDropped], dropped_ += records, __ATOMIC_RELAXED);
}

RingCredits::Grant RingCredits::granted(Dir dir) {
  std::lock_guard<std::mutex> lock(mu_);
  return Grant{granted_[uint8_t(dir)], frameBytes_[uint8_t(dir)]};
}

bool RingCredits::grant(const Credit& c) {
  if (c.total <= granted_[uint8_t(c.dir)]) return false;  // records may arrive out of order: the largest counts
  granted_[uint8_t(c.dir)] = c.total;
  frameBytes_[uint8_t(c.dir)] = c.frameBytes;
  uint32_t* w = words() + CreditsLayout::kDirs + CreditsLayout::kDirWords * uint8_t(c.dir);
  __atomic_store_n(&w[CreditsLayout::kFrameBytes], c.frameBytes, __ATOMIC_RELAXED);
  publishU64(w + CreditsLayout::kGranted, c.total);
  return __atomic_exchange_n(&w[CreditsLayout::kWaiting], 0u, __ATOMIC_ACQ_REL) == 1;
}

}  // namespace rvma::ring
