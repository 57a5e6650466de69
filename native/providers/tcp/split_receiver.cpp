#include "split_receiver.h"

#include "tcp_connection.h"

namespace rvma {

SplitReceiver::~SplitReceiver() { dropBelow(UINT64_MAX); }

SplitReceiver::Started SplitReceiver::begin(uint64_t id, const wire::FrameHeader& f, const wire::PartExt& ext,
                                            TcpConnection* conn, uint64_t serial) {
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    Entry e{f.vaddr, ext.putOffset, ext.putLen, f.parts, {}, {}};
    Status s = table_.reserve(f.vaddr, Placement{false, ext.putOffset}, ext.putLen, conn->peerNodeId(), &e.res);
    if (!ok(s)) return {Begin::Refuse, nullptr, s};
    it = entries_.emplace(id, std::move(e)).first;
  }
  Entry& e = it->second;
  if (e.vaddr != f.vaddr || e.putOffset != ext.putOffset || e.putLen != ext.putLen || e.parts != f.parts) {
    return {Begin::Violation};
  }
  uint8_t* dst = e.res.dst + (f.offset - ext.putOffset);
  for (Part& p : e.seen) {
    if (p.offset == f.offset) {
      // The same part again: only a re-send over another connection is legitimate.
      if (p.len != f.len || p.serial == serial) return {Begin::Violation};
      if (p.landed) return {Begin::Landed};
      if (p.writer) return {Begin::Busy, nullptr, Status::Ok, p.writer};
      p.writer = conn;
      p.serial = serial;
      return {Begin::Write, dst};
    }
    if (f.offset < p.offset + p.len && p.offset < f.offset + f.len) return {Begin::Violation};  // overlap
  }
  if (e.seen.size() >= e.parts) return {Begin::Violation};
  e.seen.push_back(Part{f.offset, f.len, conn, serial, false});
  return {Begin::Write, dst};
}

SplitReceiver::End SplitReceiver::end(uint64_t id, uint64_t offset) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return End::Violation;
  Entry& e = it->second;
  uint64_t covered = 0;
  bool all = e.seen.size() == e.parts;
  for (Part& p : e.seen) {
    if (p.offset == offset) {
      p.writer = nullptr;
      p.landed = true;
    }
    all = all && p.landed;
    covered += p.len;
  }
  if (!all) return End::Partial;
  // Every part in, none overlapping: they cover the put exactly, or the sender is broken.
  bool whole = covered == e.putLen;
  if (whole) table_.commit(e.res, 1); else table_.cancel(e.res);
  entries_.erase(it);
  return whole ? End::Placed : End::Violation;
}

void SplitReceiver::abort(uint64_t id, uint64_t offset) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  for (Part& p : it->second.seen) {
    if (p.offset == offset) p.writer = nullptr;
  }
}

void SplitReceiver::writersBelow(uint64_t floor, std::vector<TcpConnection*>* out) const {
  for (auto it = entries_.begin(); it != entries_.end() && it->first < floor; ++it) {
    for (const Part& p : it->second.seen) {
      if (p.writer) out->push_back(p.writer);
    }
  }
}

void SplitReceiver::dropBelow(uint64_t floor) {
  for (auto it = entries_.begin(); it != entries_.end() && it->first < floor;) {
    table_.cancel(it->second.res);
    it = entries_.erase(it);
  }
}

}  // namespace rvma
