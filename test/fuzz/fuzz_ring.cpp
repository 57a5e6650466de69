// libFuzzer harness: a ring member's native data plane (native/ring): a direction's frames
// (ring_frame, ring_inbound), the credits its senders may use (ring_credit, ring_credits) and
// the senders numbering frames within them (ring_outbound).
// The whole input is first a frame for the header decoder, and it and its first 24 bytes are
// records for the credit decoder (whatever decodes re-encodes to the same 16 or 24 bytes and is
// in range; a record decodes exactly when ring_credit.h says it is one). Then it drives a
// RingInbound as the engine does (its mailbox's completions handed to it) and takes and releases
// frames the way src/ring/inbound.ts does, while a peer delivers frames in any order, twice,
// outside the window or malformed. Alongside (opened by the first credits operation), a
// RingCredits takes the credit records that neighbours (and others) put into its own recycled
// mailbox of the same table, used as src/ring/credits.ts does: expect() once per direction,
// possibly after records came, and the waiting word set when a send waits; a RingOutbound per
// direction takes sequence numbers from those credits, as src/ring/outbound.ts sends.
//
// Input: byte 0: slots = b % 8 + 1; bit 3: the credit target is set by an operation rather than
// at once (JS sets it once the sender is known; a hostile one sends before). Byte 1: frameBytes
// (the stride is 16 + frameBytes rounded up to 64). Then operations, one byte each (kind = low
// 2 bits), with operands:
//   0 a frame with a ring header: seq (2 bytes LE; bit 2: 8 bytes), n (1 byte; bit 3: + 256),
//     h (headerLen = h % (n + 2): n + 1 is one byte too many), then the n bytes after the header
//   1 raw bytes as a frame: n (1 byte; bit 3: + 256), then n bytes
//   2 bit 2 clear: take the next frame in order, as JS does (after handling a pending Notify:
//     taking it back, and sending the credit an arrival made due). Bit 2 set: a credits
//     operation, below
//   3 bit 3: set the credit target now (once). Else release, next byte b: the b % count-th
//     frame still held (none held: nothing); bit 2: slot b % (slots + 2) as it is (a double
//     release, a slot never taken or out of range), unless a frame waits there untaken (JS
//     cannot name that slot)
// A credits operation (op & 7 == 6): c = (op >> 3) & 3, x = (op >> 5) & 1, y = op >> 6; a sender
// or node is one of "node-a", "node-b", "node-c", "" (index y); a base is one byte b: b & 3, or
// (b & 0x80) the 8 bytes LE that follow; a total likewise: b & 0x7f, or (b & 0x80) 8 bytes.
//   c 0 a valid record from sender y, built by encodeCredit: dir x, frameBytes (4 bytes LE),
//     total, base (a total over 2^53 makes it invalid)
//   c 1 raw bytes from sender y: x clear: n = b & 63 (over 32 is larger than a buffer), then n
//     bytes; x set: 24 bytes (a record's length)
//   c 2 expect(dir x, node y % 3, base): the first for a direction only (JS calls it once)
//   c 3 y < 2: the waiting word of direction x is set to 1 (Credits.waitFor); y 2: direction x's
//     RingOutbound takes a number for a frame of b * 4 bytes (one byte b; b & 0x80: 4 bytes LE
//     follow instead); y 3: the credits mailbox closes (later deliveries find no mailbox)
// Operands past the end read as zeros.
//
// Checks: the harness models the window (a frame is accepted exactly when it decodes, lies in
// [released, released + slots) and was not accepted before; anything else breaks the direction
// once, and nothing is published or sent after). A taken frame is the one delivered with that
// seq, whole, in its slot, and stays untouched until released. Credits never decrease, never
// exceed slots + releases, go back in batches of at most half the slots, and at once when the
// sender has used them all (else it would wait forever); each goes to the sender on the release
// that made it, or, made by an arrival, with the Notify that JS handles. A Notify goes out once
// per batch, and a release that is not one changes nothing (after the mailbox closed: nothing
// is sent and grantDue and the credits-sent count stay as they were).
// Credits: every put of at most a buffer's 32 bytes lands (the mailbox recycles its buffers: it
// never runs out), in the buffers in turn, and completes once, naming its sender. The harness
// decodes each record itself (magic, version, dir <= 1, total <= 2^53, 24 bytes) and models
// RingCredits: before expect() a direction keeps, per (sender, base), the record of the largest
// total (the first of it), for at most 8 of them (a record of another one is dropped); expect()
// applies the kept one of (node, base), if any (every record kept for it counts as taken), and
// forgets the others (every record kept for them counts as dropped); after it, a record of
// (node, base) is taken, any other dropped;
// a malformed one is always dropped. Granted (read as JS reads a shared_u64) is the largest
// total taken, published once per increase, with the frameBytes of the record that first
// reached it; notify() runs exactly when it increases while the direction's waiting word is 1,
// which it sets back to 0. The taken and dropped words count as modelled; the others stay 0.
// Senders: a frame is numbered (0, 1, 2... per direction, its ring header decoding to that
// number and its header length) exactly when the sender's view of the credits has one free;
// that view is read again once used up, so no frame is ever numbered beyond the credits taken.
// Once the neighbour's frame size is known, a larger frame is refused and takes no number.
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
#include "native/ring/ring_credit.h"
#include "native/ring/ring_credits.h"
#include "native/ring/ring_frame.h"
#include "native/ring/ring_inbound.h"
#include "native/ring/ring_outbound.h"

using namespace rvma;
using namespace rvma::ring;

namespace {

constexpr uint64_t kBox = 0x10000;
constexpr uint64_t kCreditsBox = 0x20000;
const char* const kSenders[4] = {"node-a", "node-b", "node-c", ""};

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

uint64_t readU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

// A credit record as ring_credit.h describes it, read here on its own: whether it is one.
bool isCredit(const uint8_t* b, size_t len) {
  return len == kCreditBytes && b[0] == 0x52 && b[1] == 0x43 && b[2] == kCreditVersion && b[3] <= 1 &&
         readU64(b + 8) <= kMaxSeq + 1;
}

// The credit decoder takes exactly the records of ring_credit.h, which re-encode to the same bytes.
void fuzzCreditDecoder(const uint8_t* data, size_t size) {
  Credit c{};
  const bool decodes = decodeCredit(data, size, &c).empty();
  require(decodes == isCredit(data, size));
  if (!decodes) return;
  uint8_t again[kCreditBytes];
  encodeCredit(again, c);
  require(std::memcmp(again, data, kCreditBytes) == 0);
  require(uint8_t(c.dir) <= 1 && c.total <= kMaxSeq + 1 && c.total == readU64(data + 8) &&
          c.base == readU64(data + 16) && c.frameBytes == uint32_t(readU64(data + 4)));
}

class Ring;
class Credits;

// Hands each mailbox's completions to what claimed it (the ring's frames, the credits), as the
// engine does for a claimed mailbox.
class Sink : public EventSink {
 public:
  Ring* ring = nullptr;
  Credits* credits = nullptr;
  void completions(const std::vector<CompletionRecord>& records) override;
  void mailboxReleased(uint32_t) override {}
  void putSettled(uint64_t, Status, const std::string&) override {}
  void connected(uint64_t, Status, const std::string&) override {}
  void peerLost(const std::string&, uint64_t, const std::string&) override {}
  void rawWritten(uint32_t, uint64_t, uint64_t) override {}
  void regionReleased(uint32_t) override {}
  void protocolError(const std::string&, const std::string&) override {}
  void authFailed(const std::string&, const std::string&) override {}
};

// One table for every input, its mailboxes opened and closed by each: a table of its own would
// allocate and fault in a 128 KiB page of completion words per input, most of a run's time.
Sink& sharedSink() {
  static Sink sink;
  return sink;
}
MailboxTable& sharedTable() {
  static MailboxTable table(sharedSink());
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
        table_(sharedTable()),
        state_(slots, Slot::Posted),
        content_(slots) {
    require(slab_ && layout_.fits(layout_.bytes()));
    sharedSink().ring = this;
    std::memset(slab_.get(), 0, layout_.bytes());
    // As src/ring/generation.ts opens it: an epoch per frame, a buffer per slot.
    MailboxConfig cfg;
    cfg.epochType = EpochType::Ops;
    cfg.threshold = 1;
    cfg.maxBuffers = slots;
    OpenedMailbox opened;
    require(ok(table_.open(kBox, cfg, &opened)));
    inbound_ = std::make_unique<RingInbound>(kBox, slab_.get(), layout_, [this](const std::string& text) {
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
    // Counted when sent, and only then (after the mailbox closed a release sends nothing).
    require(words()[SlabLayout::kCreditsSent] == uint32_t(sent_.size()));
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
    sharedSink().ring = nullptr;
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
    const uint32_t due = words()[SlabLayout::kGrantDue], sentWord = words()[SlabLayout::kCreditsSent];
    if (counts) released_++;
    require(ok(inbound_->release(table_, slot)));
    const uint64_t granted = readGranted();
    require(granted >= granted_ && granted <= layout_.slots + released_);
    if (!open_) {
      // Its buffer finds no mailbox: nothing is sent, counted as sent or taken back.
      require(sent_.size() == sends && words()[SlabLayout::kGrantDue] == due &&
              words()[SlabLayout::kCreditsSent] == sentWord);
    }
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

// A RingCredits on its recycled mailbox in the shared table, as src/ring/credits.ts opens it,
// with a model of what it publishes.
class Credits {
 public:
  Credits()
      : block_(static_cast<uint8_t*>(std::aligned_alloc(64, CreditsLayout::kBytes)), &std::free),
        table_(sharedTable()) {
    require(block_ != nullptr);
    std::memset(block_.get(), 0, CreditsLayout::kBytes);
    sharedSink().credits = this;
    MailboxConfig cfg;
    cfg.epochType = EpochType::Ops;
    cfg.threshold = 1;
    cfg.maxBuffers = CreditsLayout::kBuffers;
    cfg.reportSender = true;
    cfg.recycle = true;
    OpenedMailbox opened;
    require(ok(table_.open(kCreditsBox, cfg, &opened)));
    credits_ = std::make_shared<RingCredits>(kCreditsBox, block_.get(), [this] { notifies_++; });
    require(ok(credits_->start(table_)));
    for (uint32_t dir = 0; dir < 2; dir++) out_[dir] = std::make_unique<RingOutbound>(credits_, Dir(dir));
    check();
  }

  // A put of `bytes` from kSenders[sender].
  void deliver(const std::vector<uint8_t>& bytes, uint32_t sender) {
    const Status expected = !open_ ? Status::NoMailbox
                            : bytes.size() > CreditsLayout::kBufferBytes ? Status::TooLarge
                                                                         : Status::Ok;
    pending_ = &bytes;
    pendingSender_ = sender;
    completions_ = 0;
    Status s = table_.deliver(kCreditsBox, Placement{false, 0}, bytes.data(), bytes.size(), kSenders[sender]);
    pending_ = nullptr;
    // Recycled buffers: a put that fits always finds one, and ends its epoch.
    require(s == expected && completions_ == (ok(s) ? 1u : 0u));
  }

  // What the engine's completions() does for the credits mailbox, with the model alongside.
  void completed(const CompletionRecord& r) {
    require(pending_ && open_ && r.vaddr == kCreditsBox && r.bytes == pending_->size() && r.ops == 1 &&
            r.sender == kSenders[pendingSender_]);
    // Re-posted at the tail as each retires: the buffers come round in turn.
    require(r.data == block_.get() + CreditsLayout::kBuffersAt +
                          uint64_t(CreditsLayout::kBufferBytes) * (retired_ % CreditsLayout::kBuffers));
    if (r.bytes) require(std::memcmp(r.data, pending_->data(), r.bytes) == 0);
    completions_++;
    retired_++;
    fuzzCreditDecoder(r.data, r.bytes);
    if (!isCredit(r.data, r.bytes)) {
      dropped_++;
    } else {
      const uint32_t dir = r.data[3];
      const uint64_t total = readU64(r.data + 8), base = readU64(r.data + 16);
      const uint32_t frameBytes = uint32_t(readU64(r.data + 4));
      Dir_& d = dirs_[dir];
      if (!d.expected) {
        auto it = std::find_if(d.early.begin(), d.early.end(),
                               [&](const Kept& k) { return k.sender == r.sender && k.base == base; });
        if (it != d.early.end()) {
          if (total > it->total) it->total = total, it->frameBytes = frameBytes;
          it->records++;
        } else if (d.early.size() < 8) {
          d.early.push_back(Kept{r.sender, base, total, frameBytes, 1});
        } else {
          dropped_++;
        }
      } else if (r.sender == d.node && base == d.base) {
        taken_++;
        raise(d, total, frameBytes);
      } else {
        dropped_++;
      }
    }
    credits_->completed(r);
  }

  // Credits of `dir` count from kSenders[node]'s instance at `base` (once per direction, as JS).
  void expect(uint32_t dir, uint32_t node, uint64_t base) {
    Dir_& d = dirs_[dir];
    if (d.expected) return;
    d.expected = true;
    d.node = kSenders[node];
    d.base = base;
    for (const Kept& k : d.early) {
      if (k.sender != d.node || k.base != base) {
        dropped_ += k.records;
        continue;
      }
      taken_ += k.records;
      raise(d, k.total, k.frameBytes);
    }
    d.early.clear();
    credits_->expect(Dir(dir), kSenders[node], base);
  }

  // Credits.waitFor(dir).
  void wait(uint32_t dir) {
    dirs_[dir].waiting = 1;
    __atomic_store_n(&dirWords(dir)[CreditsLayout::kWaiting], 1u, __ATOMIC_SEQ_CST);
  }

  // A frame of `bytes` (up to 3 of them its header) sent on dir.
  void send(uint32_t dir, uint64_t bytes) {
    Dir_& d = dirs_[dir];
    const uint32_t headerLen = uint32_t(std::min<uint64_t>(bytes, 3));
    uint8_t head[kFrameHeaderBytes] = {};
    const RingOutbound::Take got = out_[dir]->take(bytes, headerLen, head);
    if (d.sent >= d.seen && d.granted > d.seen) {
      d.seen = d.granted;
      d.seenFrameBytes = d.frameBytes;
    }
    const RingOutbound::Take want = d.seen > 0 && bytes > d.seenFrameBytes ? RingOutbound::Take::TooLarge
                                    : d.sent >= d.seen                   ? RingOutbound::Take::NoCredit
                                                                         : RingOutbound::Take::Ok;
    require(got == want);
    if (got == RingOutbound::Take::Ok) {
      FrameHeader h{};
      require(decodeFrameHeader(head, kFrameHeaderBytes + bytes, &h).empty() && h.seq == d.sent && h.headerLen == headerLen);
      d.sent++;
    }
    require(d.sent <= d.granted && out_[dir]->sent() == d.sent);
  }

  void close() {
    if (!open_) return;
    bool released = false;
    require(ok(table_.close(kCreditsBox, &released)) && released);
    open_ = false;
  }

  // After every operation.
  void check() {
    require(words()[CreditsLayout::kTaken] == taken_ && words()[CreditsLayout::kDropped] == dropped_);
    require(notifies_ == expectedNotifies_);
    for (uint32_t w = 0; w < CreditsLayout::kBuffersAt / 4; w++) {
      const bool used = w == CreditsLayout::kTaken || w == CreditsLayout::kDropped ||
                        (w >= CreditsLayout::kDirs && w < CreditsLayout::kDirs + 2 * CreditsLayout::kDirWords &&
                         (w - CreditsLayout::kDirs) % CreditsLayout::kDirWords <= CreditsLayout::kWaiting);
      if (!used) require(words()[w] == 0);
    }
    for (uint32_t dir = 0; dir < 2; dir++) {
      const Dir_& d = dirs_[dir];
      const uint32_t* w = dirWords(dir);
      // Written once per increase; JS's read (readSharedU64) finds it even, so it takes it.
      require(w[CreditsLayout::kGranted] == 2 * d.publishes);
      const uint64_t granted = uint64_t(w[CreditsLayout::kGranted + 1]) | uint64_t(w[CreditsLayout::kGranted + 2]) << 32;
      require(granted == d.granted && granted >= d.lastRead && granted <= kMaxSeq + 1);
      dirs_[dir].lastRead = granted;
      require(w[CreditsLayout::kFrameBytes] == d.frameBytes && w[CreditsLayout::kWaiting] == d.waiting);
    }
  }

  void finish() {
    close();
    check();
    sharedSink().credits = nullptr;
  }

 private:
  // A record kept before expect(): the largest total of (sender, base), the first with it.
  struct Kept {
    std::string sender;
    uint64_t base, total;
    uint32_t frameBytes;
    uint32_t records;  // kept for this (sender, base)
  };
  struct Dir_ {
    bool expected = false;
    std::string node;
    uint64_t base = 0;
    std::vector<Kept> early;
    uint64_t granted = 0, lastRead = 0;
    uint32_t frameBytes = 0, waiting = 0, publishes = 0;
    // The sender: frames numbered, and the credits and frame size as it last read them.
    uint64_t sent = 0, seen = 0;
    uint32_t seenFrameBytes = 0;
  };

  // A taken record's total: published when larger; a send waiting for it hears of it.
  void raise(Dir_& d, uint64_t total, uint32_t frameBytes) {
    if (total <= d.granted) return;
    d.granted = total;
    d.frameBytes = frameBytes;
    d.publishes++;
    if (d.waiting == 1) expectedNotifies_++;
    d.waiting = 0;
  }
  uint32_t* words() { return reinterpret_cast<uint32_t*>(block_.get()); }
  uint32_t* dirWords(uint32_t dir) { return words() + CreditsLayout::kDirs + CreditsLayout::kDirWords * dir; }

  std::unique_ptr<uint8_t, decltype(&std::free)> block_;
  MailboxTable& table_;
  std::shared_ptr<RingCredits> credits_;
  std::unique_ptr<RingOutbound> out_[2];
  Dir_ dirs_[2];
  uint32_t taken_ = 0, dropped_ = 0;
  uint64_t notifies_ = 0, expectedNotifies_ = 0, retired_ = 0;
  bool open_ = true;
  const std::vector<uint8_t>* pending_ = nullptr;  // the record deliver() is placing
  uint32_t pendingSender_ = 0;
  unsigned completions_ = 0;
};

void Sink::completions(const std::vector<CompletionRecord>& records) {
  for (const auto& r : records) {
    if (r.vaddr == kBox && ring) ring->completed(r);
    else if (r.vaddr == kCreditsBox && credits) credits->completed(r);
    else std::abort();
  }
}

// A credit record's base or total: one byte (its low bits), or the 8 bytes after it.
uint64_t smallOrWide(Input& in, uint8_t lowBits) {
  const uint8_t b = in.byte();
  return b & 0x80 ? in.word(8) : b & lowBits;
}

void creditsOperation(Credits& credits, uint8_t op, Input& in) {
  const uint32_t x = (op >> 5) & 1, y = op >> 6;
  switch ((op >> 3) & 3) {
    case 0: {
      Credit c{};
      c.dir = Dir(x);
      c.frameBytes = uint32_t(in.word(4));
      c.total = smallOrWide(in, 0x7f);
      c.base = smallOrWide(in, 3);
      std::vector<uint8_t> record(kCreditBytes);
      encodeCredit(record.data(), c);
      // What the encoder writes decodes whenever its total is in range.
      Credit back{};
      const bool decodes = decodeCredit(record.data(), record.size(), &back).empty();
      require(decodes == (c.total <= kMaxSeq + 1));
      if (decodes) {
        require(back.dir == c.dir && back.frameBytes == c.frameBytes && back.total == c.total && back.base == c.base);
      }
      credits.deliver(record, y);
      break;
    }
    case 1: {
      std::vector<uint8_t> bytes(x ? kCreditBytes : in.byte() & 63);
      in.take(bytes.data(), bytes.size());
      fuzzCreditDecoder(bytes.data(), bytes.size());
      credits.deliver(bytes, y);
      break;
    }
    case 2:
      credits.expect(x, y % 3, smallOrWide(in, 3));
      break;
    case 3:
      if (y < 2) {
        credits.wait(x);
      } else if (y == 2) {
        const uint8_t b = in.byte();
        credits.send(x, b & 0x80 ? in.word(4) : uint64_t(b) * 4);
      } else {
        credits.close();
      }
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzzDecoder(data, size);
  fuzzCreditDecoder(data, size);
  if (size >= kCreditBytes) fuzzCreditDecoder(data, kCreditBytes);
  Input in(data, size);
  const uint8_t setup = in.byte();
  const uint32_t slots = setup % 8 + 1;
  const uint64_t frameBytes = in.byte();
  Ring ring(slots, frameBytes, setup & 8);
  std::unique_ptr<Credits> credits;  // opened by the first credits operation
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
        if (op & 4) {
          if (!credits) credits = std::make_unique<Credits>();
          creditsOperation(*credits, op, in);
        }
        else ring.take();
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
    if (credits) credits->check();
  }
  ring.finish();
  if (credits) credits->finish();
  return 0;
}
