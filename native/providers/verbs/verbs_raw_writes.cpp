// Raw one-sided writes over a connection. The writer asks the owner once per region key for
// the region (RegionQuery / RegionInfo), then RDMA_WRITEs straight into it and sends a notice
// on the same queue pair (Raw, answered by Ack). The owner lends its regions through the
// provider's RegionLender (core/region_lender.h) and withdraws them with Revoke / RevokeAck.
#include <algorithm>
#include <cstring>

#include "verbs_connection.h"
#include "verbs_provider.h"

namespace rvma {

using namespace verbs;

// A raw write needs the peer's region: asked for once per key, then cached until revoked.
void VerbsConnection::sendRaw(const PutRequest& req) {
  auto cached = regions_.find(req.vaddr);
  if (cached != regions_.end()) return writeRaw(req, cached->second);
  auto asked = queries_.find(req.vaddr);
  if (asked != queries_.end()) return asked->second.push_back(req);
  uint32_t index;
  uint8_t* p = ctrlTx(&index);
  if (!p) return owner_.ctx().events.putSettled(req.id, Status::PeerLost);
  KeyMsg m{CtrlHeader{kMagic, uint16_t(MsgType::RegionQuery), 0}, req.vaddr};
  std::memcpy(p, &m, sizeof m);
  queries_[req.vaddr].push_back(req);
  sendCtrl(index, sizeof m);
}

// RDMA_WRITE(s) straight into the region, then the notice on the same queue pair. Small
// writes go from a staging slot, larger ones from the caller's memory, registered meanwhile.
void VerbsConnection::writeRaw(const PutRequest& req, const RemoteRegion& region) {
  const uint64_t offset = req.where.offset;
  if (req.len > region.len) return owner_.ctx().events.putSettled(req.id, Status::TooLarge);
  if (offset > region.len || req.len > region.len - offset) {
    return owner_.ctx().events.putSettled(req.id, Status::OutOfBounds);
  }
  OutPut out{req};
  const uint8_t* src = req.data;
  uint32_t lkey = localMr_->lkey;
  if (req.len > slotBytes_) {
    out.source = owner_.registrations().acquire(req.data, req.len, req.memory);
    if (!out.source) return owner_.ctx().events.putSettled(req.id, Status::Registration);
    lkey = out.source->mr->lkey;
  } else if (req.len) {
    out.slot = freeSlots_.back();
    freeSlots_.pop_back();
    uint8_t* stage = txStage_ + size_t(out.slot) * slotBytes_;
    std::memcpy(stage, req.data, req.len);
    src = stage;
  }
  uint32_t index;
  uint8_t* p = ctrlTx(&index);
  if (!p) {
    if (out.source) owner_.registrations().release(out.source);
    return owner_.ctx().events.putSettled(req.id, Status::PeerLost);
  }
  for (uint64_t off = 0; off < req.len; off += kChunk) {
    SendWr w{};
    w.sge = ibv_sge{uintptr_t(src + off), uint32_t(std::min(kChunk, req.len - off)), lkey};
    w.kind = kWrite;
    w.wr.opcode = IBV_WR_RDMA_WRITE;
    w.wr.wr.rdma.remote_addr = region.addr + offset + off;
    w.wr.wr.rdma.rkey = region.rkey;
    postSend(w);
  }
  RawMsg m{CtrlHeader{kMagic, uint16_t(MsgType::Raw), 0}, req.id, req.vaddr, offset, req.len};
  std::memcpy(p, &m, sizeof m);
  outstanding_.emplace(req.id, std::move(out));
  sendCtrl(index, sizeof m);
}

void VerbsConnection::revoke(uint64_t key) { sendUnsolicited(MsgType::Revoke, key); }

// Lends one of our regions to the peer: its address and key leave this node, by design.
void VerbsConnection::onRegionQuery(uint64_t key) {
  RegionLender::Lent lent;
  Status s = owner_.lender().lend(key, id_, peerNode_, &lent);
  uint32_t index;
  uint8_t* p = ctrlTx(&index);
  if (!p) return;
  RegionInfoMsg m{CtrlHeader{kMagic, uint16_t(MsgType::RegionInfo), uint16_t(s)}, rkeyOf(lent), 0, key, uint64_t(uintptr_t(lent.pin.dst)), lent.pin.len};
  std::memcpy(p, &m, sizeof m);
  sendCtrl(index, sizeof m);
}

void VerbsConnection::onRegionInfo(const RegionInfoMsg& m) {
  auto it = queries_.find(m.key);
  if (it == queries_.end()) return protocolFail("region answer for a region not asked for");
  if (!isAnswer(m.h.status)) {
    return protocolFail("region answer with an invalid status " + std::to_string(m.h.status));
  }
  std::vector<PutRequest> writes = std::move(it->second);
  queries_.erase(it);
  if (m.h.status == uint16_t(Status::Ok)) {
    regions_[m.key] = RemoteRegion{m.addr, m.len, m.rkey};
    waiting_.insert(waiting_.begin(), writes.begin(), writes.end());
  } else {
    for (const PutRequest& req : writes) owner_.ctx().events.putSettled(req.id, Status(m.h.status));
  }
  startWaiting();
}

// The bytes are in (RC order): the region table decides whether they count.
void VerbsConnection::onRaw(const RawMsg& m) {
  RegionReservation r;
  Status s = owner_.ctx().regions.reserve(m.key, m.offset, m.len, peerNode_, &r);
  if (ok(s)) owner_.ctx().regions.commit(r);
  sendAck(m.putId, s, kNoSlot);
}

// Every write to the region was posted before the confirmation, so it lands before it.
void VerbsConnection::onRevoke(uint64_t key) {
  if (!regions_.erase(key)) return protocolFail("revoke of a region not lent");
  sendUnsolicited(MsgType::RevokeAck, key);
}

}  // namespace rvma
