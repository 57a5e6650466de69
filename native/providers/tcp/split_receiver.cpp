#include "split_receiver.h"

namespace rvma {

SplitReceiver::~SplitReceiver() {
  for (auto& [key, e] : entries_) release(e, false);
}

void SplitReceiver::release(Entry& e, bool commit) {
  if (!e.reserved) return;
  e.reserved = false;
  if (commit) table_.commit(e.res, 1); else table_.cancel(e.res);
}

SplitReceiver::Begin SplitReceiver::begin(const Key& key, const wire::FrameHeader& f, const wire::PartExt& ext,
                                          uint8_t** dst, Status* status) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    Entry e;
    e.vaddr = f.vaddr;
    e.putOffset = ext.putOffset;
    e.putLen = ext.putLen;
    e.parts = f.parts;
    e.refused = table_.reserve(f.vaddr, Placement{false, ext.putOffset}, ext.putLen, &e.res);
    e.reserved = ok(e.refused);
    it = entries_.emplace(key, e).first;
  }
  Entry& e = it->second;
  if (e.vaddr != f.vaddr || e.putOffset != ext.putOffset || e.putLen != ext.putLen || e.parts != f.parts ||
      e.seen + e.writers >= e.parts) {
    return Begin::Violation;
  }
  if (!ok(e.refused)) {
    *status = e.refused;
    e.seen++;
    finishIfDone(it);
    return Begin::Refuse;
  }
  e.writers++;
  *dst = e.res.dst + (f.offset - ext.putOffset);
  return Begin::Write;
}

bool SplitReceiver::end(const Key& key, uint64_t len) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  Entry& e = it->second;
  e.writers--;
  e.seen++;
  e.received += len;
  // More bytes than announced, or all parts in without covering the put: a broken sender.
  bool broken = e.received > e.putLen || (e.seen == e.parts && e.received != e.putLen && ok(e.refused));
  if (broken) {
    e.refused = Status::PeerLost;
    if (e.writers == 0) {
      release(e, false);
      entries_.erase(it);
    }
    return false;
  }
  finishIfDone(it);
  return true;
}

void SplitReceiver::abort(const Key& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  e.writers--;
  e.seen++;
  if (ok(e.refused)) e.refused = Status::PeerLost;  // later parts are refused too
  finishIfDone(it);
}

// Counted only if every part arrived and together they cover the whole put. A put that can
// no longer complete gives its reservation back as soon as no part is being written.
void SplitReceiver::finishIfDone(std::map<Key, Entry>::iterator it) {
  Entry& e = it->second;
  if (e.writers > 0) return;
  if (!ok(e.refused)) release(e, false);
  if (e.seen < e.parts) return;
  release(e, ok(e.refused) && e.received == e.putLen);
  entries_.erase(it);
}

void SplitReceiver::forgetNode(const std::string& node) {
  for (auto it = entries_.lower_bound(Key{node, 0}); it != entries_.end() && it->first.first == node;) {
    release(it->second, false);
    it = entries_.erase(it);
  }
}

}  // namespace rvma
