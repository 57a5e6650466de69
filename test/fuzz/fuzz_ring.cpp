// libFuzzer harness: a ring direction's native receive path (native/ring). The whole input is
// first a frame for the header decoder (whatever decodes re-encodes to the same 16 bytes and is
// in range). Then it drives a RingInbound as the engine does (its mailbox's completions handed
// to it) and takes and releases frames the way src/ring/inbound.ts does, while a peer delivers
// frames in any order, twice, outside the window or malformed.
//
// Input: byte 0: slots = b % 8 + 1; bit 3: the credit target is set by an operation rather than
// at once (JS sets it once the sender is known; a hostile one sends before). Byte 1: frameBytes
// (the stride is 16 + frameBytes rounded up to 64). Then operations, one byte each (kind = low
// 2 bits), with operands:
//   0 a frame with a ring header: seq (2 bytes LE; bit 2: 8 bytes), n (1 byte; bit 3: + 256),
//     h (headerLen = h % (n + 2): n + 1 is one byte too many), then the n bytes after the header
//   1 raw bytes as a frame: n (1 byte; bit 3: + 256), then n bytes
//   2 take the next frame in order, as JS does (after handling a pending Notify: taking it
//     back, and sending the credit an arrival made due)
//   3 bit 3: set the credit target now (once). Else release, next byte b: the b % count-th
//     frame still held (none held: nothing); bit 2: slot b % (slots + 2) as it is (a double
//     release, a slot never taken or out of range), unless a frame waits there untaken (JS
//     cannot name that slot)
// Operands past the end read as zeros.
//
// Checks: the harness models the window (a frame is accepted exactly when it decodes, lies in
// [released, released + slots) and was not accepted before; anything else breaks the direction
// once, and nothing is published or sent after). A taken frame is the one delivered with that
// seq, whole, in its slot, and stays untouched until released. Credits never decrease, never
// exceed slots + releases, go back in batches of at most half the slots, and at once when the
// sender has used them all (else it would wait forever); each goes to the sender on the release
// that made it, or, made by an arrival, with the Notify that JS handles. A Notify goes out once
// per batch, and a release that is not one changes nothing.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "native/core/event_sink.h"
#include "native/core/mailbox_table.h"
#include "native/ring/ring_frame.h"
#include "native/ring/ring_inbound.h"

using namespace rvma;
using namespace rvma::ring;

namespace {

constexpr uint64_t kBox = 0x10000;

void require(bool holds) {
  if (!holds) std::abort();
}

uint64_t roundUp64(uint64_t n) { return (n + 63) / 64 * 64; }

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool more() const { return p_ < end_; }
  uint8_t byte() { return p_ < end_ ? *p_++ : 0; }
  uint64_t word(size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= uint64_t(byte()) << (8 * i);
    return v;
  }
  void take(uint8_t* out, size_t n) {
    size_t k = std::min<size_t>(n, size_t(end_ - p_));
    if (k) std::memcpy(out, p_, k);
    if (n > k) std::memset(out + k, 0, n - k);
    p_ += k;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// Whatever decodes is exactly what the encoder writes, and lies inside its frame.
void fuzzDecoder(const uint8_t* data, size_t size) {
  FrameHeader h{};
  if (!decodeFrameHeader(data, size, &h).empty()) return;
  require(size >= kFrameHeaderBytes);
  uint8_t again[kFrameHeaderBytes];
  encodeFrameHeader(again, h.seq, h.headerLen);
  require(std::memcmp(again, data, kFrameHeaderBytes) == 0);
  require(h.headerLen <= size - kFrameHeaderBytes && h.seq <= kMaxSeq);
}

class Ring;

// Hands the mailbox's completions to the ring, as the engine does for a claimed mailbox.
class Sink : public EventSink {
 public:
  Ring* ring = nullptr;
  void completions(const std::vector<CompletionRecord>& records) override;
  void mailboxReleased(uint32_t) override {}
  void putDone(uint64_t, Status) override {}
  void connected(uint64_t, Status, const std::string&) override {}
  void peerLost(const std::string&, uint64_t, const std::string&) override {}
  void rawWritten(uint32_t, uint64_t, uint64_t) override {}
  void regionReleased(uint32_t) override {}
  void protocolError(const std::string&, const std::string&) override {}
  void authFailed(const std::string&, const std::string&) override {}
};

// One table for every input, its mailbox opened and closed by each: a table of its own would
// allocate and fault in a 128 KiB page of completion words per input, most of a run's time.
MailboxTable& sharedTable(Ring* ring) {
  static Sink sink;
  static MailboxTable table(sink);
  sink.ring = ring;
  return table;
}

// Where a slot's buffer is, in the harness's model.
enum class Slot : uint8_t { Posted, Arrived, Taken, Gone };

class Ring {
 public:
  Ring(uint32_t slots, uint64_t frameBytes, bool targetLate)
      : layout_{slots, frameBytes, roundUp64(kFrameHeaderBytes + frameBytes),
                roundUp64(4ull * (SlabLayout::kEntries + SlabLayout::kEntryWords * slots))},
        // Zeroed, as JS's is: no entry's tag names a lap before a frame is published there.
        slab_(static_cast<uint8_t*>(std::aligned_alloc(64, layout_.bytes())), &std::free),
        table_(sharedTable(this)),
        state_(slots, Slot::Posted),
        content_(slots) {
    require(slab_ && layout_.fits(layout_.bytes()));
    std::memset(slab_.get(), 0, layout_.bytes());
    // As src/ring/generation.ts opens it: an epoch per frame, a buffer per slot.
    MailboxConfig cfg;
    cfg.epochType = EpochType::Ops;
    cfg.threshold = 1;
    cfg.maxBuffers = slots;
    OpenedMailbox opened;
    require(ok(table_.open(kBox, cfg, &opened)));
    inbound_ = std::make_unique<RingInbound>(kBox, slab_.get(), 0, layout_, [this](const std::string& text) {
      if (text.empty()) {
        notifies_++;
        return;
      }
      breaks_++;
      broken_ = true;
      brokenWords_.assign(words(), words() + layout_.wordsBytes / 4);
      sentAtBreak_ = sent_.size();
    });
    granted_ = readGranted();
    require(granted_ == slots);
    require(ok(inbound_->start(table_)));
    if (!targetLate) target();
  }

  void deliver(const std::vector<uint8_t>& frame) {
    const size_t posted = size_t(std::count(state_.begin(), state_.end(), Slot::Posted));
    const Status expected = posted == 0 ? Status::NoBuffer : frame.size() > layout_.stride ? Status::TooLarge : Status::Ok;
    pending_ = &frame;
    completions_ = 0;
    Status s = table_.deliver(kBox, Placement{true, 0}, frame.data(), frame.size(), "peer");
    pending_ = nullptr;
    // Ops epochs of one put: each frame placed retires its buffer at once.
    require(s == expected && completions_ == (ok(s) ? 1u : 0u));
  }

  // What the engine's completions() does for the ring's mailbox, with the model alongside.
  void completed(const CompletionRecord& r) {
    require(pending_ && r.vaddr == kBox && r.bytes == pending_->size() && r.data >= buffer(0));
    if (r.bytes) require(std::memcmp(r.data, pending_->data(), r.bytes) == 0);
    const uint64_t at = uint64_t(r.data - buffer(0));
    require(at % layout_.stride == 0 && at / layout_.stride < layout_.slots);
    const uint32_t slot = uint32_t(at / layout_.stride);
    require(state_[slot] == Slot::Posted);
    completions_++;

    FrameHeader h{};
    const bool decodes = decodeFrameHeader(r.data, r.bytes, &h).empty();
    const bool wasBroken = broken_;
    const bool accept = !wasBroken && decodes && h.seq >= released_ && h.seq - released_ < layout_.slots &&
                        !accepted_.count(h.seq);
    const bool armed = words()[SlabLayout::kNotify] == 0;
    const uint64_t notifies = notifies_;
    const size_t sentBefore = sent_.size();
    inbound_->completed(r);
    if (wasBroken) {
      require(notifies_ == notifies);
      state_[slot] = Slot::Gone;  // never posted again
      return;
    }
    require(accept == !broken_);
    if (!accept) {
      require(notifies_ == notifies);
      state_[slot] = Slot::Gone;
      return;
    }
    state_[slot] = Slot::Arrived;
    content_[slot].assign(r.data, r.data + r.bytes);
    accepted_.insert(h.seq);
    arrived_[h.seq] = slot;
    received_++;
    // One Notify per batch: sent when JS had taken the last one back, else already pending.
    require(words()[SlabLayout::kNotify] == 1 && notifies_ == notifies + (armed ? 1 : 0));
    require(words()[SlabLayout::kReceived] == uint32_t(received_));
    const uint32_t* e = entry(h.seq);
    require(e[0] == uint32_t(h.seq / layout_.slots + 1) && e[1] == slot && e[2] == uint32_t(r.bytes) &&
            e[3] == h.headerLen);
    require(sent_.size() == sentBefore);  // no put under the table's lock
  }

  // src/ring/inbound.ts take(): the entry of position nextSeq % slots, when its tag names
  // nextSeq's lap.
  void take() {
    // A pending Notify first, as notified() handles it before it reads the entries.
    if (__atomic_exchange_n(&words()[SlabLayout::kNotify], 0u, __ATOMIC_ACQ_REL) == 1) {
      if (__atomic_load_n(&words()[SlabLayout::kGrantDue], __ATOMIC_RELAXED)) inbound_->sendDue();
      require(words()[SlabLayout::kGrantDue] == 0);
      if (targeted_ && !broken_) require(lastSent() == readGranted());
    }
    const uint32_t* e = entry(nextSeq_);
    const bool ready = __atomic_load_n(&e[0], __ATOMIC_ACQUIRE) == uint32_t(nextSeq_ / layout_.slots + 1);
    auto it = arrived_.find(nextSeq_);
    require(ready == (it != arrived_.end()));
    if (!ready) return;
    const uint32_t slot = e[1], bytes = e[2], headerLen = e[3];
    require(slot < layout_.slots && kFrameHeaderBytes + uint64_t(headerLen) <= bytes && bytes <= layout_.stride);
    require(slot == it->second && state_[slot] == Slot::Arrived && bytes == content_[slot].size());
    FrameHeader h{};
    require(decodeFrameHeader(buffer(slot), bytes, &h).empty() && h.seq == nextSeq_ && h.headerLen == headerLen);
    require(std::memcmp(buffer(slot), content_[slot].data(), bytes) == 0);
    state_[slot] = Slot::Taken;
    held_.push_back(slot);
    arrived_.erase(it);
    nextSeq_++;
  }

  // How credits reach the sender (ringTarget): the first of them goes now.
  void target() {
    if (targeted_) return;
    targeted_ = true;
    inbound_->target([this](uint64_t total) {
      // Increasing, as granted when it goes, never after the break.
      require(total > lastSent() && total == readGranted() && !broken_);
      sent_.push_back(total);
    });
    if (!broken_) require(lastSent() == readGranted());
  }

  // The i-th frame still held goes back (ArrivedFrame.release()).
  void releaseHeld(size_t i) {
    if (held_.empty()) return;
    const uint32_t slot = held_[i % held_.size()];
    held_.erase(held_.begin() + ptrdiff_t(i % held_.size()));
    release(slot);
  }

  // A slot as it is; not one whose frame waits untaken: JS cannot know it.
  void releaseAny(uint32_t slot) {
    if (slot < layout_.slots && state_[slot] == Slot::Arrived) return;
    auto it = std::find(held_.begin(), held_.end(), slot);
    if (it != held_.end()) held_.erase(it);
    release(slot);
  }

  // After every operation: what holds whatever happened.
  void check() {
    require(breaks_ <= 1 && inbound_->received() == received_);
    if (broken_) {
      // Nothing published, counted, granted or sent after the break (but the words JS takes back).
      for (uint32_t w = 0; w < layout_.wordsBytes / 4; w++) {
        if (w != SlabLayout::kNotify && w != SlabLayout::kGrantDue) require(words()[w] == brokenWords_[w]);
      }
      require(sent_.size() == sentAtBreak_);
    }
    const uint64_t granted = readGranted();
    require(granted >= granted_ && granted <= layout_.slots + released_);
    granted_ = granted;
    const uint32_t due = words()[SlabLayout::kGrantDue];
    require(due <= 1 && words()[SlabLayout::kNotify] <= 1);
    // A credit made due by an arrival has a Notify on its way to JS, which sends it.
    if (due) require(words()[SlabLayout::kNotify] == 1 && targeted_);
    if (!broken_) {
      const uint64_t allowed = layout_.slots + released_;
      require(allowed - granted < std::max<uint64_t>(1, layout_.slots >> 1));
      require(received_ != granted || granted == allowed);
      if (targeted_ && open_) require(due == (granted > lastSent() ? 1u : 0u));
    }
    require(lastSent() <= granted);
    // Once the mailbox is closed a release counts a credit it cannot send (nobody to send to).
    if (open_) require(words()[SlabLayout::kCreditsSent] == uint32_t(sent_.size()));
    // Frames published or held are intact until released.
    for (uint32_t slot = 0; slot < layout_.slots; slot++) {
      if (state_[slot] != Slot::Arrived && state_[slot] != Slot::Taken) continue;
      require(std::memcmp(buffer(slot), content_[slot].data(), content_[slot].size()) == 0);
    }
    for (const auto& [seq, slot] : arrived_) {
      const uint32_t* e = entry(seq);
      require(e[0] == uint32_t(seq / layout_.slots + 1) && e[1] == slot);
    }
  }

  // The mailbox closes (the ring's generation ends); frames still held are released after it.
  void finish() {
    bool released = false;
    require(ok(table_.close(kBox, &released)) && released);
    open_ = false;
    while (!held_.empty()) releaseHeld(0);
    check();
  }

 private:
  uint32_t* words() { return reinterpret_cast<uint32_t*>(slab_.get()); }
  uint8_t* buffer(uint32_t slot) { return slab_.get() + layout_.wordsBytes + layout_.stride * slot; }
  const uint32_t* entry(uint64_t seq) {
    return words() + SlabLayout::kEntries + SlabLayout::kEntryWords * (seq % layout_.slots);
  }
  // A shared_u64.h count: a sequence word, even when not being written, then the two halves.
  uint64_t readGranted() {
    const uint32_t* w = words() + SlabLayout::kGranted;
    require(w[0] % 2 == 0);
    return uint64_t(w[1]) | uint64_t(w[2]) << 32;
  }
  uint64_t lastSent() const { return sent_.empty() ? 0 : sent_.back(); }

  void release(uint32_t slot) {
    const bool counts = slot < layout_.slots && state_[slot] == Slot::Taken && !broken_;
    const uint64_t before = readGranted();
    const size_t sends = sent_.size();
    if (counts) released_++;
    require(ok(inbound_->release(table_, slot)));
    const uint64_t granted = readGranted();
    require(granted >= granted_ && granted <= layout_.slots + released_);
    if (counts) {
      state_[slot] = Slot::Posted;
      // The credit it made due goes with it (the mailbox closed: nobody is left to send to).
      if (targeted_ && open_) require(lastSent() == granted);
    } else {
      // Not a release: nothing changes (a frame held when the direction broke is not posted again).
      require(granted == before && sent_.size() == sends);
      if (slot < layout_.slots && state_[slot] == Slot::Taken) state_[slot] = Slot::Gone;
    }
  }

  const SlabLayout layout_;
  std::unique_ptr<uint8_t, decltype(&std::free)> slab_;
  MailboxTable& table_;
  std::unique_ptr<RingInbound> inbound_;

  std::vector<Slot> state_;
  std::vector<std::vector<uint8_t>> content_;  // per slot: the frame delivered into it
  std::set<uint64_t> accepted_;                // every seq accepted
  std::map<uint64_t, uint32_t> arrived_;       // accepted, not yet taken: seq -> slot
  std::vector<uint32_t> held_;                 // taken, not yet released, in the order taken
  uint64_t nextSeq_ = 0, released_ = 0, received_ = 0, granted_ = 0, notifies_ = 0;
  int breaks_ = 0;
  bool broken_ = false, targeted_ = false, open_ = true;
  std::vector<uint32_t> brokenWords_;
  std::vector<uint64_t> sent_;  // the credit totals sent, in order
  size_t sentAtBreak_ = 0;
  const std::vector<uint8_t>* pending_ = nullptr;  // the frame deliver() is placing
  unsigned completions_ = 0;
};

void Sink::completions(const std::vector<CompletionRecord>& records) {
  for (const auto& r : records) ring->completed(r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzzDecoder(data, size);
  Input in(data, size);
  const uint8_t setup = in.byte();
  const uint32_t slots = setup % 8 + 1;
  const uint64_t frameBytes = in.byte();
  Ring ring(slots, frameBytes, setup & 8);
  while (in.more()) {
    const uint8_t op = in.byte();
    switch (op & 3) {
      case 0: {
        const uint64_t seq = in.word(op & 4 ? 8 : 2);
        const size_t n = in.byte() + (op & 8 ? 256 : 0);
        const uint32_t headerLen = uint32_t(in.byte() % (n + 2));
        std::vector<uint8_t> frame(kFrameHeaderBytes + n);
        encodeFrameHeader(frame.data(), seq, headerLen);
        in.take(frame.data() + kFrameHeaderBytes, n);
        // What the encoder writes decodes whenever its fields are in range.
        FrameHeader h{};
        const bool decodes = decodeFrameHeader(frame.data(), frame.size(), &h).empty();
        require(decodes == (headerLen <= n && seq <= kMaxSeq));
        if (decodes) require(h.seq == seq && h.headerLen == headerLen);
        ring.deliver(frame);
        break;
      }
      case 1: {
        std::vector<uint8_t> frame(in.byte() + (op & 8 ? 256 : 0));
        in.take(frame.data(), frame.size());
        fuzzDecoder(frame.data(), frame.size());
        ring.deliver(frame);
        break;
      }
      case 2:
        ring.take();
        break;
      case 3: {
        if (op & 8) {
          ring.target();
          break;
        }
        const uint8_t b = in.byte();
        if (op & 4) ring.releaseAny(b % (slots + 2));
        else ring.releaseHeld(b);
        break;
      }
    }
    ring.check();
  }
  ring.finish();
  return 0;
}
