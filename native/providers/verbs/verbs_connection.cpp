// A connection's data pump: puts out (eager, RTS/READ), their answers, keepalive, teardown.
#include "verbs_connection.h"

#include "../../core/debug_log.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "verbs_messages.h"
#include "verbs_provider.h"

namespace rvma {

using namespace verbs;

namespace {
constexpr uint32_t kEagerHeader = sizeof(EagerHeader);
// Revokes, their answers, Pings and Pongs waiting for a spare send buffer, at most (as the
// 4096 answers tcp and shm hold for a peer that does not read).
constexpr size_t kMaxUnsolicited = 4096;
}  // namespace

bool VerbsConnection::isAnswer(uint16_t s) {
  return s <= uint16_t(Status::Closed) || s == uint16_t(Status::Registration) || s == uint16_t(Status::Forbidden);
}

VerbsConnection::VerbsConnection(VerbsProvider& owner, uint32_t id, CmIdPtr cmId, bool outgoing, std::string address)
    : owner_(owner), id_(id), cmId_(std::move(cmId)), outgoing_(outgoing), address_(std::move(address)),
      state_(State::Resolving), startedMs_(VerbsProvider::nowMs()), slots_(owner.options().slots),
      slotBytes_(owner.options().slotBytes),
      ctrlCount_(ctrlDepth(slots_)), sqDepth_(sendDepth(slots_)) {
  if (authenticates()) auth::PeerAuth::freshNonce(&nonce_);  // unused (zeros on the wire) without auth
}

// The queue pair goes first (no DMA after it), then the memory it used.
VerbsConnection::~VerbsConnection() {
  destroyQp();
  cmId_.reset();
  ringMr_.reset();
  localMr_.reset();
}

// Control send buffers: we have at most `window` requests and `window` answers outstanding,
// plus the hello; the spare ones are kept apart so that revokes can never take a buffer a
// request or an answer needs. Receives come from the provider's shared receive queue.
Status VerbsConnection::setup(std::string* error) {
  const size_t ringBytes = size_t(slots_) * slotBytes_;
  const size_t localBytes = ringBytes + size_t(ctrlCount_) * kCtrlBytes;
  ring_ = allocPages(ringBytes);
  local_ = allocPages(localBytes);
  if (!ring_ || !local_) {
    *error = "out of memory for the connection's buffers";
    return Status::NoPeer;
  }
  ringMr_.reset(ibv_reg_mr(owner_.pd(), ring_.get(), ringBytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
  localMr_.reset(ringMr_ ? ibv_reg_mr(owner_.pd(), local_.get(), localBytes, IBV_ACCESS_LOCAL_WRITE) : nullptr);
  if (!ringMr_ || !localMr_) {
    *error = "the connection's buffers: " + registrationError(ringMr_ ? localBytes : ringBytes, errno);
    return Status::Registration;
  }
  txStage_ = local_.get();
  ctrlTxBase_ = txStage_ + ringBytes;
  for (uint32_t i = ctrlCount_; i-- > 0;) (i >= ctrlCount_ - kSpareCtrl ? freeSpareTx_ : freeCtrlTx_).push_back(i);

  ibv_qp_init_attr attr{};
  attr.send_cq = attr.recv_cq = owner_.cq();
  attr.srq = owner_.srq();
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = sqDepth_;
  attr.cap.max_send_sge = 1;
  attr.sq_sig_all = 0;  // selective signalling (kSignalEvery)
  if (rdma_create_qp(cmId_.get(), owner_.pd(), &attr) != 0) {
    *error = std::string("cannot create a queue pair: ") + std::strerror(errno);
    return Status::NoPeer;
  }
  owner_.addQp(cmId_->qp->qp_num, id_);
  return Status::Ok;
}

void VerbsConnection::destroyQp() {
  if (!cmId_ || !cmId_->qp) return;
  owner_.removeQp(cmId_->qp->qp_num);
  rdma_destroy_qp(cmId_.get());
}

rdma_conn_param VerbsConnection::connParam() const {
  rdma_conn_param p{};
  p.responder_resources = uint8_t(owner_.maxReadDepth());
  p.initiator_depth = uint8_t(owner_.maxReadDepth());
  p.retry_count = 7;
  p.rnr_retry_count = 7;  // the peer's shared receive queue running dry makes us retry, never fail
  return p;
}

void VerbsConnection::markRound() {
  if (roundDue_) return;
  roundDue_ = true;
  owner_.dueThisRound(id_);
}

void VerbsConnection::postSend(const SendWr& w) {
  if (state_ == State::Dead) return;  // the queue pair is gone; fail() settled every put
  backlog_.push_back(w);
  markRound();
}

void VerbsConnection::endRound() {
  if (state_ != State::Dead) flushAnswers();
  if (state_ != State::Dead) flushSends();
  roundDue_ = false;
}

// What waits, as far as the send queue has room, in one ibv_post_send. A READ is always
// signalled (its completion places the put). An eager write never needs its completion (the
// peer's answer frees its slot), so the chain's last asks for one only when it is not an eager
// write or when an unsignalled one before it frees something (a control buffer): nothing that
// holds a resource waits for a later post to be retired, and a lone put costs the sender one
// completion (the answer) instead of two.
void VerbsConnection::flushSends() {
  const size_t n = std::min<size_t>(backlog_.size(), sqDepth_ - sqInflight_);
  if (n == 0) return;
  chain_.assign(backlog_.begin(), backlog_.begin() + ptrdiff_t(n));
  backlog_.erase(backlog_.begin(), backlog_.begin() + ptrdiff_t(n));
  bool owed = false;  // an unsignalled request whose completion frees something
  for (size_t i = 0; i < n; i++) {
    SendWr& w = chain_[i];
    const uint32_t seq = nextSeq_++;
    w.wr.wr_id = wrId(seq);
    w.wr.sg_list = &w.sge;
    w.wr.num_sge = 1;
    w.wr.next = i + 1 < n ? &chain_[i + 1].wr : nullptr;
    bool signal = w.kind == kRead || ++sinceSignal_ >= kSignalEvery;
    if (i + 1 == n && (w.kind != kEagerSend || owed)) signal = true;
    if (signal) {
      w.wr.send_flags |= IBV_SEND_SIGNALED;
      sinceSignal_ = 0;
      owed = false;
    } else if (w.kind != kEagerSend) {
      owed = true;
    }
    posted_.push_back(Posted{seq, w.kind, w.index});
  }
  sqInflight_ += uint32_t(n);
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(cmId_->qp, &chain_[0].wr, &bad) != 0) {
    fail(Status::PeerLost, std::string("ibv_post_send: ") + std::strerror(errno));
  }
}

void VerbsConnection::retire(const Posted& p) {
  sqInflight_--;
  if (p.kind == kRead) return onReadDone(p.index);
  if (p.kind != kCtrlSend) return;  // an eager slot is freed by its answer, not its send
  if (p.index >= ctrlCount_ - kSpareCtrl) {
    freeSpareTx_.push_back(p.index);
    drainUnsolicited();
  } else {
    freeCtrlTx_.push_back(p.index);
  }
}

uint8_t* VerbsConnection::ctrlTx(uint32_t* index) {
  if (freeCtrlTx_.empty()) {
    protocolFail("peer exceeded its window (no control buffer left)");
    return nullptr;
  }
  *index = freeCtrlTx_.back();
  freeCtrlTx_.pop_back();
  return ctrlTxBase_ + size_t(*index) * kCtrlBytes;
}

void VerbsConnection::sendCtrl(uint32_t index, uint32_t len) {
  SendWr w{};
  w.sge = ibv_sge{uintptr_t(ctrlTxBase_ + size_t(index) * kCtrlBytes), len, localMr_->lkey};
  w.wr.opcode = IBV_WR_SEND;
  w.kind = kCtrlSend;
  w.index = index;
  postSend(w);
}

// Revokes, pings and their answers take no window entry: they wait for a spare buffer. A
// peer whose queue takes none of ours (our sends retry forever: rnr_retry_count 7) could make
// them pile up with its own Pings or Revokes: a Ping or Pong already waiting says all a second
// one would, and past kMaxUnsolicited waiting the peer is not reading at all.
void VerbsConnection::sendUnsolicited(MsgType type, uint64_t key) {
  bool bare = type == MsgType::Ping || type == MsgType::Pong;
  if (bare && std::find(unsolicited_.begin(), unsolicited_.end(), std::make_pair(type, key)) != unsolicited_.end()) return;
  if (unsolicited_.size() >= kMaxUnsolicited) {
    return protocolFail("the peer took none of our last " + std::to_string(kMaxUnsolicited) + " messages");
  }
  unsolicited_.emplace_back(type, key);
  drainUnsolicited();
}

void VerbsConnection::drainUnsolicited() {
  while (state_ != State::Dead && !unsolicited_.empty() && !freeSpareTx_.empty()) {
    uint32_t index = freeSpareTx_.back();
    freeSpareTx_.pop_back();
    auto [type, key] = unsolicited_.front();
    unsolicited_.pop_front();
    KeyMsg m{CtrlHeader{kMagic, uint16_t(type), 0}, key};
    std::memcpy(ctrlTxBase_ + size_t(index) * kCtrlBytes, &m, sizeof m);
    bool bare = type == MsgType::Ping || type == MsgType::Pong;
    sendCtrl(index, bare ? sizeof m.h : sizeof m);
  }
}

void VerbsConnection::sendAck(uint64_t putId, Status status, uint32_t slot) {
  answers_.push_back(AckEntry{putId, slot, uint16_t(status), 0});
  markRound();
}

// One answer goes as an Ack (a lone put's round trip is unchanged), more as Acks of up to
// kMaxAcks each, in the order the puts were answered.
void VerbsConnection::flushAnswers() {
  for (size_t at = 0; at < answers_.size() && state_ != State::Dead;) {
    const uint32_t count = uint32_t(std::min<size_t>(kMaxAcks, answers_.size() - at));
    uint32_t index;
    uint8_t* p = ctrlTx(&index);
    if (!p) return;
    if (count == 1) {
      const AckEntry& a = answers_[at];
      AckMsg m{CtrlHeader{kMagic, uint16_t(MsgType::Ack), a.status}, a.slot, 0, a.putId};
      std::memcpy(p, &m, sizeof m);
      sendCtrl(index, sizeof m);
    } else {
      AcksMsg m{CtrlHeader{kMagic, uint16_t(MsgType::Acks), 0}, count, 0, {}};
      std::copy_n(answers_.begin() + ptrdiff_t(at), count, m.entries);
      const uint32_t len = uint32_t(offsetof(AcksMsg, entries) + count * sizeof(AckEntry));
      std::memcpy(p, &m, len);
      sendCtrl(index, len);
    }
    at += count;
  }
  answers_.clear();
}

// A peer that finds the shared receive queue empty gets an RNR NAK and retries (forever:
// rnr_retry_count 7) after the wait our queue pair names in it. rdma_cm sets that wait
// (min_rnr_timer) to 0, which encodes the longest, 655 ms; an RTS queue pair may change it.
// If the device refuses, the long wait stays: slower when the queue runs dry, still correct.
void VerbsConnection::shortenRnrWait() {
  constexpr uint8_t kRnrTimer = 12;  // 0.64 ms in the InfiniBand encoding
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.min_rnr_timer = kRnrTimer;
  (void)ibv_modify_qp(cmId_->qp, &attr, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER);
}

void VerbsConnection::put(const PutRequest& req) {
  if (state_ != State::Ready || inflight() >= window_ || !waiting_.empty()) {
    waiting_.push_back(req);
    return;
  }
  sendPut(req);
}

// Puts wait for a credit (a free landing slot / window entry) and leave as answers return them.
void VerbsConnection::startWaiting() {
  while (state_ == State::Ready && !waiting_.empty() && inflight() < window_) {
    PutRequest req = std::move(waiting_.front());
    waiting_.pop_front();
    sendPut(req);
  }
}

void VerbsConnection::sendPut(const PutRequest& req) {
  // A put meant for an earlier incarnation of the node must not reach its successor.
  if (req.incarnation != 0 && req.incarnation != peerIncarnation_) {
    owner_.ctx().events.putSettled(req.id, Status::PeerLost);
    return;
  }
  // Above the peer's limit: refused here, without a round trip. Raw writes need this most: the
  // owner cannot refuse what lands in its region directly.
  if (req.len > peerMaxPut_) return owner_.ctx().events.putSettled(req.id, Status::TooLarge);
  if (req.raw) return sendRaw(req);
  const uint32_t flags = req.where.append ? kAppend : 0;
  const uint64_t offset = req.where.append ? 0 : req.where.offset;
  if (req.len <= eagerMax_) {
    uint32_t slot = freeSlots_.back();
    freeSlots_.pop_back();
    uint8_t* stage = txStage_ + size_t(slot) * slotBytes_;
    EagerHeader h{req.id, req.vaddr, offset, uint32_t(req.len), flags};
    std::memcpy(stage, &h, sizeof h);
    req.copyTo(stage + sizeof h);
    outstanding_.emplace(req.id, OutPut{req, slot, nullptr});
    SendWr w{};
    w.sge = ibv_sge{uintptr_t(stage), uint32_t(kEagerHeader + req.len), localMr_->lkey};
    w.kind = kEagerSend;
    w.index = slot;
    w.wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    w.wr.imm_data = htonl(slot);
    w.wr.wr.rdma.remote_addr = peerRing_ + uint64_t(slot) * peerSlotBytes_;
    w.wr.wr.rdma.rkey = peerRkey_;
    postSend(w);
    return;
  }
  // Large: the receiver reads the source in place; its registration is held until the answer.
  // It reads one range: a gathered put's head goes in the message, or (too long) is joined.
  const uint64_t headLen = req.headLen;
  if (headLen > kMaxRtsHead || (headLen && headLen == req.len)) {
    PutRequest whole = req;
    whole.join();
    return sendPut(whole);
  }
  RegistrationCache::Entry* source = owner_.registrations().acquire(req.data, req.len - headLen, req.memory);
  if (!source) return owner_.ctx().events.putSettled(req.id, Status::Registration);
  uint32_t index;
  uint8_t* p = ctrlTx(&index);
  if (!p) {
    owner_.registrations().release(source);
    owner_.ctx().events.putSettled(req.id, Status::PeerLost);
    return;
  }
  RtsMsg m{CtrlHeader{kMagic, uint16_t(MsgType::Rts), 0}, flags | (headLen ? kRtsHead : 0), source->mr->rkey, req.id,
           req.vaddr, offset, req.len, uint64_t(uintptr_t(req.data))};
  std::memcpy(p, &m, sizeof m);
  if (headLen) std::memcpy(p + sizeof m, req.head, headLen);
  outstanding_.emplace(req.id, OutPut{req, kNoSlot, source});
  sendCtrl(index, uint32_t(sizeof m + headLen));
}

// A signalled work request completed: so did every one posted before it.
void VerbsConnection::onCompletion(const ibv_wc& wc) {
  if (state_ == State::Dead) return;
  if (wc.status != IBV_WC_SUCCESS) {
    fail(Status::PeerLost, std::string("RDMA work request failed: ") + ibv_wc_status_str(wc.status));
    return;
  }
  const uint32_t seq = uint32_t(wc.wr_id);
  bool reached = false;
  while (!reached && !posted_.empty() && state_ != State::Dead) {
    Posted p = posted_.front();
    posted_.pop_front();
    reached = p.seq == seq;
    retire(p);
  }
  if (state_ == State::Dead) return;
  if (!backlog_.empty()) markRound();  // room again for what waits
  if (authFailing_) finishAuthFail();
}

void VerbsConnection::onReceive(const ibv_wc& wc, const uint8_t* msg, uint32_t len) {
  if (state_ == State::Dead || authFailing_) return;  // failed authentication: nothing more of the peer's counts
  if (wc.status != IBV_WC_SUCCESS) {
    fail(Status::PeerLost, std::string("RDMA receive failed: ") + ibv_wc_status_str(wc.status));
    return;
  }
  heardMs_ = VerbsProvider::nowMs();  // only the peer's software sends: proof it is alive
  if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) return onEager(ntohl(wc.imm_data), wc.byte_len);
  onCtrl(msg, len);
}

// What the peer may send next (decodeCtrl enforces it): its hello, then (both authenticating)
// its proof alone, then the rest.
Phase VerbsConnection::phase() const {
  if (!helloReceived_) return Phase::AwaitHello;
  return authenticates() && !peerProven_ ? Phase::AwaitProof : Phase::Open;
}

bool VerbsConnection::authenticates() const { return owner_.ctx().auth.enabled(); }

void VerbsConnection::onEager(uint32_t slot, uint32_t byteLen) {
  if (phase() != Phase::Open) {
    return protocolFail(helloReceived_ ? "eager put before the peer authenticated" : "eager put before the hello");
  }
  EagerHeader h;
  std::string bad = decodeEager(ring_.get(), slot, byteLen, slots_, slotBytes_, &h);
  if (!bad.empty()) return protocolFail(bad);
  const uint8_t* at = ring_.get() + size_t(slot) * slotBytes_;
  Placement where{(h.flags & kAppend) != 0, h.offset};
  Status s = h.len > owner_.options().maxPutBytes ? Status::TooLarge
                                                  : owner_.ctx().table.deliver(h.vaddr, where, at + kEagerHeader, h.len, peerNode_);
  sendAck(h.putId, s, slot);  // the slot is free again: the credit rides on the answer
}

// Every message was decoded and checked (verbs_messages.cpp) before any of it acts.
void VerbsConnection::onCtrl(const uint8_t* p, uint32_t len) {
  CtrlMsg m;
  std::string bad = decodeCtrl(p, len, phase(), &m);
  if (!bad.empty()) return protocolFail(bad);
  switch (m.type) {
    case MsgType::Hello:
      return onHello(m);
    case MsgType::Auth:
      return onAuth(m.auth);
    case MsgType::Rts:
      return onRts(m.rts, m.rtsHead);
    case MsgType::Ack:
      return onAck(m.ack);
    case MsgType::Acks:
      return onAcks(m.acks);
    case MsgType::RegionInfo:
      return onRegionInfo(m.regionInfo);
    case MsgType::Raw:
      return onRaw(m.raw);
    case MsgType::Ping:
      return sendUnsolicited(MsgType::Pong);
    case MsgType::Pong:
      pinging_ = false;
      return;
    case MsgType::RegionQuery:
      return onRegionQuery(m.key.key);
    case MsgType::Revoke:
      return onRevoke(m.key.key);
    case MsgType::RevokeAck:
      if (!owner_.lender().returned(m.key.key, id_)) return protocolFail("revoke confirmed for a region not revoked");
      return;
  }
}

// Large put: reserve the range, then read the sender's bytes straight into the mailbox buffer
// (behind the head that came with the message, if any).
void VerbsConnection::onRts(const RtsMsg& m, const std::string& head) {
  if (m.len > owner_.options().maxPutBytes) return sendAck(m.putId, Status::TooLarge, kNoSlot);
  Reservation r;
  Status s = owner_.ctx().table.reserve(m.vaddr, Placement{(m.flags & kAppend) != 0, m.offset}, m.len, peerNode_, &r);
  if (!ok(s)) return sendAck(m.putId, s, kNoSlot);
  if (m.len == 0) {
    owner_.ctx().table.commit(r);
    return sendAck(m.putId, Status::Ok, kNoSlot);
  }
  // The whole posted buffer is registered, so puts into the same buffer share one registration.
  RegistrationCache::Entry* target = owner_.registrations().acquire(r.buffer->data, r.buffer->size, r.buffer->memory);
  if (!target) {
    owner_.ctx().table.cancel(r);
    return sendAck(m.putId, Status::Registration, kNoSlot);
  }
  uint32_t readId = nextRead_;
  nextRead_ = (nextRead_ + 1) & 0xffffff;
  if (nextRead_ == 0) nextRead_ = 1;
  std::memcpy(r.dst, head.data(), head.size());
  uint8_t* dst = r.dst + head.size();
  const uint64_t len = m.len - head.size();
  uint32_t chunks = uint32_t((len + kChunk - 1) / kChunk);
  reads_.emplace(readId, ReadOp{m.putId, r, target, chunks});
  for (uint64_t off = 0; off < len && state_ != State::Dead; off += kChunk) {
    SendWr w{};
    w.sge = ibv_sge{uintptr_t(dst + off), uint32_t(std::min(kChunk, len - off)), target->mr->lkey};
    w.kind = kRead;
    w.index = readId;
    w.wr.opcode = IBV_WR_RDMA_READ;
    w.wr.wr.rdma.remote_addr = m.addr + off;
    w.wr.wr.rdma.rkey = m.rkey;
    postSend(w);
  }
}

void VerbsConnection::onReadDone(uint32_t readId) {
  auto it = reads_.find(readId);
  if (it == reads_.end() || --it->second.chunksLeft > 0) return;
  ReadOp op = it->second;
  reads_.erase(it);
  owner_.ctx().table.commit(op.res);
  owner_.registrations().release(op.target);
  sendAck(op.putId, Status::Ok, kNoSlot);  // the FIN: the sender's put resolves
}

void VerbsConnection::onAck(const AckMsg& m) {
  if (settle(m.putId, m.h.status)) startWaiting();
}

void VerbsConnection::onAcks(const AcksMsg& m) {
  for (uint32_t i = 0; i < m.count; i++) {
    if (!settle(m.entries[i].putId, m.entries[i].status)) return;
  }
  startWaiting();
}

// The answer frees the put's landing slot (our credit) and its source's registration.
bool VerbsConnection::settle(uint64_t putId, uint16_t status) {
  auto it = outstanding_.find(putId);
  if (it == outstanding_.end() || !isAnswer(status)) {
    protocolFail(it == outstanding_.end() ? "answer for an unknown put id " + std::to_string(putId)
                                          : "answer with an invalid status " + std::to_string(status));
    return false;
  }
  OutPut out = std::move(it->second);
  outstanding_.erase(it);
  if (out.slot != kNoSlot) freeSlots_.push_back(out.slot);
  if (out.source) owner_.registrations().release(out.source);
  owner_.ctx().events.putSettled(out.req.id, Status(status));
  return true;
}

void VerbsConnection::protocolFail(const std::string& why) {
  owner_.ctx().events.protocolError(peerNode_.empty() ? (address_.empty() ? "rdma peer" : address_) : peerNode_, why);
  fail(Status::PeerLost, why);
}

void VerbsConnection::fail(Status status, const std::string& why) {
  if (state_ == State::Dead) return;
  // Whatever ends a connection that failed authentication (its sends flushed, the peer
  // hanging up, the connect timeout), it ends as that failure.
  if (authFailing_ && status != Status::Auth && status != Status::Closed) return fail(Status::Auth, authWhy_);
  bool wasReady = state_ == State::Ready;
  state_ = State::Dead;
  if (established_) rdma_disconnect(cmId_.get());
  // No more DMA into mailbox buffers once the queue pair is gone: only then cancel the reads.
  destroyQp();
  for (auto& [readId, op] : reads_) {
    owner_.ctx().table.cancel(op.res);
    owner_.registrations().release(op.target);
  }
  reads_.clear();
  owner_.lender().holderGone(id_);
  backlog_.clear();
  posted_.clear();
  answers_.clear();
  unsolicited_.clear();
  regions_.clear();
  auto outstanding = std::move(outstanding_);
  outstanding_.clear();
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& [key, writes] : queries_) waiting.insert(waiting.end(), writes.begin(), writes.end());
  queries_.clear();
  RVMA_DEBUG_LOG(connectionEndLine("verbs", outgoing_, peerNode_, peerLabel(), wasReady, why, status == Status::Auth ? "authentication" : ""));
  // The loss before the puts it fails (as tcp): a listener learns why before the first rejection.
  if (wasReady && status != Status::Closed) owner_.ctx().events.peerLost(peerNode_, peerIncarnation_, why);
  for (auto& [putId, out] : outstanding) {
    if (out.source) owner_.registrations().release(out.source);
    owner_.ctx().events.putSettled(putId, status == Status::Closed ? Status::Closed : Status::PeerLost);
  }
  const std::string reason = status == Status::Auth ? why : std::string();  // the put's error says why
  for (auto& req : waiting) {
    // Never connected, but aimed at a known incarnation or node: that node is gone.
    bool gone = status == Status::NoPeer && (req.incarnation != 0 || !expectedNode_.empty());
    owner_.ctx().events.putSettled(req.id, gone ? Status::PeerLost : status, reason);
  }
  if (status == Status::Auth) {
    owner_.ctx().events.authFailed(peerLabel(), peerNode_.empty() ? why : why + " (it claimed node \"" + peerNode_ + "\")");
  }
  for (uint64_t request : connectRequests_) owner_.ctx().events.connected(request, status, why);
  connectRequests_.clear();
  owner_.onDead(this);
}

void VerbsConnection::tick(uint64_t nowMs, uint64_t missedMs) {
  const VerbsOptions& o = owner_.options();
  TickGap::credit(&startedMs_, missedMs, nowMs);
  TickGap::credit(&heardMs_, missedMs, nowMs);
  if (state_ == State::Dead) return;
  if (state_ != State::Ready) {
    if (nowMs - startedMs_ > o.connectTimeoutMs) {
      fail(Status::NoPeer, "connection to " + (address_.empty() ? std::string("peer") : address_) + " timed out");
    }
    return;
  }
  // A stopped or hung peer's device still acknowledges our sends: only its answers count.
  if (nowMs - heardMs_ > o.peerTimeoutMs) {
    return fail(Status::PeerLost, "peer silent for " + std::to_string(nowMs - heardMs_) + " ms");
  }
  if (nowMs - heardMs_ >= o.keepaliveMs && !pinging_) {
    pinging_ = true;
    sendUnsolicited(MsgType::Ping);
  }
}

}  // namespace rvma
