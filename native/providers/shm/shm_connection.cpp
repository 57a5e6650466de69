// A connection's life and data pump: the rings' records in and out, placement, answers, teardown.
#include "shm_connection.h"

#include "../../core/arena.h"
#include "../../core/debug_log.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "shm_provider.h"

namespace rvma {

using namespace shm;

namespace {

// Records handled per pump before others get a turn (the eventfd is kicked to come back).
constexpr int kReceiveBudget = 1024;
// Answers not yet in the ring beyond which the peer's puts wait: it is not reading its ring.
constexpr size_t kMaxQueuedAcks = 4096;
// Far puts from this size on are pulled by two threads (see PullHelper). Unpinned, 16 MiB puts
// went from 9.4 to 12.5 GB/s; at 1 MiB the hand-off cost more than it saved (6.7 -> 5.6), and
// with the whole process pinned to one CPU it cannot help (bench:shm --placement none / split).
constexpr uint64_t kSplitPullBytes = 4ull << 20;
// Granted puts held at once per connection; beyond, far puts are pulled (a peer that never
// confirms its writes holds at most this many reservations).
constexpr size_t kMaxGrants = 64;

}  // namespace

ShmConnection::ShmConnection(ShmProvider& owner, int sock, bool dialer, std::string address, uint64_t serial)
    : owner_(owner), sock_(sock), dialer_(dialer), address_(std::move(address)),
      state_(dialer ? State::AwaitAccept : State::AwaitOffer), serial_(serial) {}

ShmConnection::~ShmConnection() {
  if (state_ != State::Dead) release();
}

// Cancels a half-placed put and closes every fd; the segment is unmapped with the object.
void ShmConnection::release() {
  cancelIncoming();
  auto& progress = owner_.ctx().progress;
  if (sockToken_) progress.remove(sockToken_, sock_);
  if (wakeToken_) progress.remove(wakeToken_, wakeFd_);
  sockToken_ = wakeToken_ = 0;
  ::close(sock_);  // the peer's socket sees the close at once
  if (wakeFd_ >= 0) ::close(wakeFd_);
  if (peerWakeFd_ >= 0) ::close(peerWakeFd_);
  wakeFd_ = peerWakeFd_ = -1;
}

void ShmConnection::start(uint64_t nowMs) {
  deadlineMs_ = nowMs + owner_.options().connectTimeoutMs;
  if (auth().enabled()) auth::PeerAuth::freshNonce(&nonce_);
  sockToken_ = owner_.ctx().progress.add(sock_, EPOLLIN | EPOLLRDHUP, [this](uint32_t e) { onSocket(e); });
  if (!dialer_) return;
  ringBytes_ = owner_.options().ringBytes;
  std::string error;
  int wakeDialer = makeEventFd(), wakeAcceptor = makeEventFd();
  if (!segment_.create(segmentBytes(ringBytes_), &error) || wakeDialer < 0 || wakeAcceptor < 0) {
    if (wakeDialer >= 0) ::close(wakeDialer);
    if (wakeAcceptor >= 0) ::close(wakeAcceptor);
    fail(Status::NoPeer, error.empty() ? "cannot create eventfds" : error, false);
    return;
  }
  wakeFd_ = wakeDialer;
  peerWakeFd_ = wakeAcceptor;
  attachRings(kFromAcceptor, kFromDialer);
  // Both consumers start asleep: the first records of either side kick.
  storeFlag(&inControl_->consumerSleeping, 1);
  storeFlag(&outControl_->consumerSleeping, 1);
  const int fds[3] = {segment_.fd(), wakeDialer, wakeAcceptor};
  if (!sendMessage(sock_, encodeHello(hello(HelloKind::Offer, 0)), fds, 3)) {
    fail(Status::NoPeer, std::string("cannot send the shm offer: ") + std::strerror(errno), false);
    return;
  }
  segment_.closeFd();  // the mapping is enough
}

void ShmConnection::attachRings(int inbound, int outbound) {
  uint8_t* base = segment_.base();
  inControl_ = reinterpret_cast<RingControl*>(base + controlOffset(inbound));
  outControl_ = reinterpret_cast<RingControl*>(base + controlOffset(outbound));
  const uint64_t maxInline = ringBytes_ / 4;
  in_ = RingReader(inControl_, base + ringOffset(inbound, ringBytes_), ringBytes_, maxInline);
  out_ = RingWriter(outControl_, base + ringOffset(outbound, ringBytes_), ringBytes_);
}

void ShmConnection::onSocket(uint32_t events) {
  uint8_t buf[kMaxHelloBytes];
  for (;;) {
    if (state_ == State::Dead) return;
    std::vector<int> fds;
    ssize_t n = receiveMessage(sock_, buf, sizeof buf, &fds);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    bool good = n > 0 && size_t(n) <= sizeof buf;
    if (good && state_ == State::AwaitOffer) {
      good = onOffer(buf, size_t(n), fds);
    } else if (good && state_ == State::Ready && messageKind(buf, size_t(n)) == kArenaShareKind) {
      good = onArenaShare(buf, size_t(n), fds);
    } else {
      for (int fd : fds) ::close(fd);  // only an offer and an arena share carry fds
      if (n <= 0) {
        bool wasReady = state_ == State::Ready;
        fail(wasReady ? Status::PeerLost : Status::NoPeer, "the peer closed its shm connection", false);
        return;
      }
      if (!good) {
        fail(Status::PeerLost, "shm: a handshake message longer than any hello", true);
        return;
      }
      if (state_ == State::AwaitAccept) good = onAccept(buf, size_t(n));
      else if (state_ == State::AwaitConfirm) good = onConfirm(buf, size_t(n));
      else if (state_ == State::Ready && dialer_) good = onLateRefusal(buf, size_t(n));
      else {
        fail(Status::PeerLost, "shm: a message on the socket after the handshake", true);
        return;
      }
    }
    if (!good) return;  // failed
  }
  if (state_ != State::Dead && (events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))) {
    fail(state_ == State::Ready ? Status::PeerLost : Status::NoPeer, "the peer closed its shm connection", false);
  }
}

// The peer's arena, mapped once: later far puts flagged kFlagArena are copied out of it.
bool ShmConnection::onArenaShare(const uint8_t* p, size_t len, std::vector<int>& fds) {
  ArenaShare share;
  std::string why = decodeArenaShare(p, len, &share);
  if (why.empty() && fds.size() != 1) why = "shm arena share: it must carry exactly one fd";
  if (why.empty() && !weCanPull_) why = "shm arena share: from a peer whose memory this side cannot read";
  if (why.empty()) {
    why = peerArena_.adopt(fds[0], share);
    fds.clear();
  }
  for (int fd : fds) ::close(fd);
  if (why.empty()) {
    RVMA_DEBUG_LOG("shm: mapped the arena of node \"" + peer_.nodeId + "\" (" + std::to_string(share.bytes >> 20) + " MiB)");
    return true;
  }
  fail(Status::PeerLost, why, true);
  return false;
}

// Before the first record that names arena memory (a far put from it, or a Grant into it), the
// arena goes to the peer: only a peer that reaches our memory already (it read our probe, and
// process_vm_writev takes the same permission as process_vm_readv) is sent either, so it
// gains nothing new.
bool ShmConnection::shareArena(const void* src, uint64_t len) {
  Arena& arena = Arena::shared();
  if (!arena.contains(src, len)) return false;
  if (!arenaShared_) {
    const int fd = arena.fd();
    arenaShared_ = sendMessage(sock_, encodeArenaShare(ArenaShare{arena.base(), Arena::kSpanBytes}), &fd, 1);
  }
  return arenaShared_;
}

// The put just begun (pending_.back()) is pulled from [data, data + len), or written there by
// us should the peer grant it.
void ShmConnection::mayBeGranted(const uint8_t* data, uint64_t len) {
  Pending& p = pending_.back();
  p.data = data;
  p.len = len;
  p.grantable = true;
}

void ShmConnection::noteArenaUsed() {
  if (arenaUsed_) return;
  arenaUsed_ = true;
  owner_.onLargePutsChanged(this);
}

void ShmConnection::becomeReady() {
  state_ = State::Ready;
  RVMA_DEBUG_LOG(connectionUpLine("shm", dialer_, peer_.nodeId, peer_.incarnation, address_, ", process " + std::to_string(peerPid())));
  // Puts queued for an incarnation of the node other than the one that answered.
  for (auto it = queued_.begin(); it != queued_.end();) {
    if (it->req.incarnation && it->req.incarnation != peer_.incarnation) {
      owner_.ctx().events.putSettled(it->req.id, Status::PeerLost);
      it = queued_.erase(it);
    } else if (it->req.raw && oneSided()) {
      writeRaw(it->req);
      it = queued_.erase(it);
    } else {
      ++it;
    }
  }
  wakeToken_ = owner_.ctx().progress.add(wakeFd_, EPOLLIN, [this](uint32_t) {
    owner_.awake();  // every peer's records get handled before we sleep: no kicks meanwhile
    drainEventFd(wakeFd_);
    pump();
  });
  owner_.onReady(this);
  if (state_ == State::Ready) pump();  // records that came before we watched the eventfd
}

void ShmConnection::put(const PutRequest& req) {
  if (state_ == State::Ready && req.incarnation && req.incarnation != peer_.incarnation) {
    owner_.ctx().events.putSettled(req.id, Status::PeerLost);
    return;
  }
  if (state_ == State::Ready && req.raw && oneSided()) {
    writeRaw(req);
  } else {
    Outgoing o{req};
    if (!inlined(req)) o.req.keep();  // pulled by the peer or sent in chunks: read later
    queued_.push_back(std::move(o));
  }
  if (state_ == State::Ready) pump();
  // Inline and not in the ring yet (no room, or the connection is not ready): keep its bytes.
  // (A raw write's notice carries none: they are in the peer's region already.)
  const Outgoing* last = queued_.empty() ? nullptr : &queued_.back();
  if (last && last->req.id == req.id && last->sent == 0 && !last->notice) {
    try {
      queued_.back().req.keep();
    } catch (...) {
      queued_.pop_back();  // nothing of it was written: refused as a whole
      throw;
    }
  }
}

bool ShmConnection::inlined(const PutRequest& req) const {
  return req.len <= std::min(owner_.options().eagerMaxBytes, ringBytes_ / 4);
}

int ShmConnection::poll() {
  if (state_ != State::Ready) return 0;
  awake();  // spinning: the peer need not kick
  if (!in_.pending()) return 0;
  pump();
  return 1;
}

void ShmConnection::awake() {
  if (state_ != State::Ready || !sleeping_) return;
  storeFlag(&inControl_->consumerSleeping, 0);
  sleeping_ = false;
}

bool ShmConnection::beforeSleep() {
  if (state_ != State::Ready) return false;
  sleeping_ = true;
  storeFlag(&inControl_->consumerSleeping, 1);
  fullFence();
  // Came in before the flag was seen, and the producer did not see it (it kicks then): handle
  // them now, which costs no eventfd write and read. Records we cannot take yet (our answers
  // wait for room in the peer's ring) wait for the peer's kick when it frees room.
  if (!in_.pending() || controls_.size() >= kMaxQueuedAcks || !takeFlag(&inControl_->consumerSleeping)) return false;
  sleeping_ = false;
  pump();
  return true;
}

bool ShmConnection::pump() {
  int work = 0;
  // A receive that stops at its budget goes on before the progress context sleeps
  // (beforeSleep); one that stops for room for our answers, once the peer frees it.
  receive(&work);
  if (state_ == State::Dead) return false;
  return transmit(&work);
}

// A turn takes only the records published when it began: what the sender adds meanwhile (it
// may, having its answers early) waits for the next turn, after the application has seen the
// completions (and re-posted buffers).
void ShmConnection::receive(int* work) {
  for (int i = 0; i < kReceiveBudget; i++) {
    if (controls_.size() >= kMaxQueuedAcks) {
      // Our answers wait for room in the peer's ring: they go first, then we read on.
      if (!transmit(work) || controls_.size() >= kMaxQueuedAcks) break;
    }
    Record r;
    std::string why;
    RingReader::Next next = in_.next(&r, &why, i == 0);
    if (next == RingReader::Next::Empty) break;
    if (next == RingReader::Next::Corrupt) {
      fail(Status::PeerLost, why, true);
      return;
    }
    if (!handle(r)) return;
    in_.consume(r);
    (*work)++;
    // After a large put (or a chunk of one) its answer and the room it freed go out at once,
    // so the sender refills while we pull the next: answering a batch only at its end ran
    // four puts of 64 KiB in lock-step across CPUs.
    if (r.type == RecordType::FarPut || r.type == RecordType::FarGatherPut || r.type == RecordType::ChunkPut) {
      releaseRoom();
      if (!controls_.empty() && !transmit(work)) return;
    }
  }
  releaseRoom();
}

void ShmConnection::releaseRoom() {
  if (!in_.publish()) return;
  fullFence();
  if (takeFlag(&inControl_->producerWaiting)) kick(peerWakeFd_);
}

bool ShmConnection::handle(const Record& r) {
  if (r.type == RecordType::Ack) return onAck(r.ack);
  if (r.type == RecordType::RegionQuery || r.type == RecordType::RegionInfo || r.type == RecordType::Revoke ||
      r.type == RecordType::RevokeAck) {
    return onRegionRecord(r);
  }
  if (r.type == RecordType::Grant) return onGrant(r.grant);
  if (r.type == RecordType::Written) return onWritten(r.key.key);
  if (r.put.id != expectedWireId_) {
    fail(Status::PeerLost, "shm ring: put " + std::to_string(r.put.id) + " out of order", true);
    return false;
  }
  if (r.type == RecordType::ChunkPut) return placeChunk(r);
  if (incoming_.active) {
    fail(Status::PeerLost, "shm ring: a put inside another put's chunks", true);
    return false;
  }
  bool fatal = false, granted = false;
  Status s = place(r, &fatal, &granted);
  if (fatal) return false;
  expectedWireId_++;
  return granted || settle(r.put.id, s, r.put.flags);
}

// An inline or far put, placed whole: reserve, copy (or pull), commit. A far put from ordinary
// memory into our arena is granted to its sender instead (onWritten commits it).
Status ShmConnection::place(const Record& r, bool* fatal, bool* granted) {
  const PutRecord& p = r.put;
  if (p.len > owner_.options().maxPutBytes) return Status::TooLarge;
  const bool far = r.type == RecordType::FarPut || r.type == RecordType::FarGatherPut;
  if (far && !weCanPull_) {
    fail(Status::PeerLost, "shm ring: a far put to a receiver that said it cannot pull", true);
    *fatal = true;
    return Status::PeerLost;
  }
  // From the peer's arena: its share came on the socket before this record (the peer sent it
  // first), so a share not handled yet is waiting there.
  const uint64_t farLen = r.type == RecordType::FarGatherPut ? p.len - r.payloadLen : p.len;
  const uint8_t* fromArena = nullptr;
  if (p.flags & kFlagArena) {
    if (!peerArena_.mapped()) onSocket(0);
    if (state_ != State::Dead && !(fromArena = peerArena_.at(r.src, farLen))) {
      fail(Status::PeerLost, peerArena_.mapped() ? "shm ring: a far put from outside the arena its sender shared"
                                                 : "shm ring: a far put from an arena its sender never shared", true);
    }
    if (state_ == State::Dead) {
      *fatal = true;
      return Status::PeerLost;
    }
  }
  Reservation res;
  RegionReservation raw;
  const bool isRaw = (p.flags & kFlagRaw) != 0;
  Status s = isRaw ? owner_.ctx().regions.reserve(p.vaddr, p.offset, p.len, peer_.nodeId, &raw)
                   : owner_.ctx().table.reserve(p.vaddr, Placement{(p.flags & kFlagAppend) != 0, p.offset}, p.len, peer_.nodeId, &res);
  if (!ok(s)) return s;
  uint8_t* dst = isRaw ? raw.dst : res.dst;
  // A FarGatherPut's head came inline; the rest is pulled (or granted) behind it.
  const uint64_t headLen = p.len - farLen;
  if (far && !fromArena && !isRaw && mayGrant(r, dst + headLen, farLen)) {
    if (headLen) std::memcpy(dst, r.payload, headLen);
    held_.push_back(Held{p.id, p.flags, Status::Ok, true, res});
    openGrants_++;
    GrantRecord g{{uint32_t(RecordType::Grant), sizeof(GrantRecord)}, 0, 0, p.id, reinterpret_cast<uint64_t>(dst + headLen), farLen};
    control(&g, sizeof g);
    *granted = true;
    return Status::Ok;
  }
  Pull pulled = Pull::Ok;
  if (r.type == RecordType::Put) {
    if (p.len) std::memcpy(dst, r.payload, p.len);
  } else if (r.type == RecordType::RawNotice) {
    // The writer put the bytes there itself: counted and reported, nothing to copy.
  } else {
    if (headLen) std::memcpy(dst, r.payload, headLen);
    if (fromArena) std::memcpy(dst + headLen, fromArena, farLen);
    else pulled = farLen >= kSplitPullBytes ? owner_.pullHelper().pull(peerPid_, dst + headLen, r.src, farLen)
                                            : pull(peerPid_, dst + headLen, r.src, farLen);
  }
  if (pulled != Pull::Ok) {
    if (isRaw) owner_.ctx().regions.cancel(raw);
    else owner_.ctx().table.cancel(res);
    if (pulled == Pull::PeerGone) fail(Status::PeerLost, "the peer process is gone", false);
    else fail(Status::PeerLost, "shm ring: a far put names memory the sender cannot lend", true);
    *fatal = true;
    return Status::PeerLost;
  }
  if (isRaw) owner_.ctx().regions.commit(raw);
  else owner_.ctx().table.commit(res);
  return Status::Ok;
}

// Chunks of one put arrive in order; the first reserves the whole range, the last commits.
// A refused put's chunks are read and dropped, and it is answered after its last one.
bool ShmConnection::placeChunk(const Record& r) {
  const PutRecord& p = r.put;
  Incoming& in = incoming_;
  if (!in.active) {
    if (r.chunkOffset != 0) {
      fail(Status::PeerLost, "shm ring: a put's chunks do not start at 0", true);
      return false;
    }
    in = Incoming{};
    in.active = true;
    in.put = p;
    const bool isRaw = (p.flags & kFlagRaw) != 0;
    if (p.len > owner_.options().maxPutBytes) in.status = Status::TooLarge;
    else if (isRaw) in.status = owner_.ctx().regions.reserve(p.vaddr, p.offset, p.len, peer_.nodeId, &in.raw);
    else in.status = owner_.ctx().table.reserve(p.vaddr, Placement{(p.flags & kFlagAppend) != 0, p.offset}, p.len, peer_.nodeId, &in.res);
  } else if (p.id != in.put.id || p.flags != in.put.flags || p.vaddr != in.put.vaddr || p.offset != in.put.offset ||
             p.len != in.put.len || r.chunkOffset != in.next) {
    fail(Status::PeerLost, "shm ring: a chunk that does not continue its put", true);
    return false;
  }
  if (ok(in.status)) {
    uint8_t* dst = (p.flags & kFlagRaw) ? in.raw.dst : in.res.dst;
    std::memcpy(dst + r.chunkOffset, r.payload, r.chunkLen);
  }
  in.next = r.chunkOffset + r.chunkLen;
  if (in.next < p.len) return true;
  if (ok(in.status)) {
    if (p.flags & kFlagRaw) owner_.ctx().regions.commit(in.raw);
    else owner_.ctx().table.commit(in.res);
  }
  Status s = in.status;
  in = Incoming{};
  expectedWireId_++;
  return settle(p.id, s, p.flags);
}

bool ShmConnection::mayGrant(const Record& r, const uint8_t* dst, uint64_t len) {
  const ShmOptions& o = owner_.options();
  if (o.senderWrites == SenderWrites::Never || len < o.senderWritesMinBytes || !peerPulls_ || openGrants_ >= kMaxGrants) {
    return false;
  }
  return (o.senderWrites == SenderWrites::Always || in_.behind(r)) && shareArena(dst, len);
}

// Our put's range in the peer's arena: we copy the bytes there and say so. The peer shared its
// arena on the socket before it published the Grant, so a share not handled yet waits there.
bool ShmConnection::onGrant(const GrantRecord& g) {
  if (!peerArena_.mapped()) onSocket(0);
  if (state_ == State::Dead) return false;
  auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) { return p.wireId == g.id; });
  if (it == pending_.end() || !it->grantable || it->granted || it->len != g.len) {
    fail(Status::PeerLost, "shm ring: a write grant for no put of ours that may take one (" + std::to_string(g.id) + ")", true);
    return false;
  }
  uint8_t* dst = peerArena_.at(g.dst, g.len);
  if (!dst) {
    fail(Status::PeerLost, peerArena_.mapped() ? "shm ring: a write grant outside the arena its receiver shared"
                                               : "shm ring: a write grant into an arena its receiver never shared", true);
    return false;
  }
  std::memcpy(dst, it->data, g.len);
  it->granted = true;
  noteArenaUsed();
  KeyRecord written{{uint32_t(RecordType::Written), sizeof(KeyRecord)}, 0, 0, g.id};
  control(&written, sizeof written);
  return true;
}

// The sender wrote a put we granted: placed now, and answered (with the puts held behind it) once
// the granted puts before it are written too.
bool ShmConnection::onWritten(uint64_t wireId) {
  auto it = std::find_if(held_.begin(), held_.end(), [&](const Held& h) { return h.wireId == wireId && h.granted; });
  if (it == held_.end()) {
    fail(Status::PeerLost, "shm ring: a write confirmed for no grant (" + std::to_string(wireId) + ")", true);
    return false;
  }
  owner_.ctx().table.commit(it->res);
  it->granted = false;
  openGrants_--;
  for (; !held_.empty() && !held_.front().granted; held_.pop_front()) {
    answer(held_.front().wireId, held_.front().status, held_.front().flags);
  }
  return true;
}

bool ShmConnection::settle(uint64_t wireId, Status status, uint32_t putFlags) {
  if (held_.empty()) {
    answer(wireId, status, putFlags);
    return true;
  }
  // A sender reads its grants before it writes more puts, so no more can come behind one than
  // its ring held when the grant went out (records of 48 bytes and more).
  if (held_.size() >= 2 * ringBytes_ / sizeof(PutRecord)) {
    fail(Status::PeerLost, "shm ring: a granted put left unwritten while its later puts pile up", true);
    return false;
  }
  held_.push_back(Held{wireId, putFlags, status, false, {}});
  return true;
}

void ShmConnection::answer(uint64_t wireId, Status status, uint32_t putFlags) {
  AckRecord ack{{uint32_t(RecordType::Ack), sizeof(AckRecord)}, uint32_t(status), 0, wireId};
  const AckPace pace = !ok(status) ? AckPace::Eager
                      : (putFlags & kFlagLateAck) ? AckPace::Late
                      : (putFlags & kFlagLazyAck) ? AckPace::Lazy
                                                  : AckPace::Eager;
  control(&ack, sizeof ack, pace);
}

void ShmConnection::control(const void* record, uint32_t size, AckPace pace) {
  Control c;
  std::memcpy(c.bytes, record, size);
  c.size = size;
  c.pace = pace;
  controls_.push_back(c);
}

// A raw write to a region we may write: copied into it now, then its notice goes in order
// with the puts (and is answered like one). The first write to a region asks for it.
void ShmConnection::writeRaw(const PutRequest& req) {
  auto& events = owner_.ctx().events;
  auto it = lent_.find(req.vaddr);
  if (it == lent_.end()) {
    auto& waiting = asked_[req.vaddr];
    waiting.push_back(req);
    waiting.back().keep();  // written once the peer lends the region
    if (waiting.size() == 1) {
      KeyRecord query{{uint32_t(RecordType::RegionQuery), sizeof(KeyRecord)}, 0, 0, req.vaddr};
      control(&query, sizeof query);
    }
    return;
  }
  const Lent& region = it->second;
  if (req.len > region.len) return events.putSettled(req.id, Status::TooLarge);
  if (req.where.offset > region.len || req.len > region.len - req.where.offset) {
    return events.putSettled(req.id, Status::OutOfBounds);
  }
  Pull pushed = push(peerPid_, region.address + req.where.offset, req.data, req.len);
  if (pushed != Pull::Ok) {
    events.putSettled(req.id, Status::PeerLost);
    if (pushed == Pull::PeerGone) fail(Status::PeerLost, "the peer process is gone", false);
    else fail(Status::PeerLost, "shm: the region the peer lent is not writable", true);
    return;
  }
  Outgoing notice{req};
  notice.notice = true;
  queued_.push_back(notice);
}

bool ShmConnection::onRegionRecord(const Record& r) {
  auto& events = owner_.ctx().events;
  switch (r.type) {
    case RecordType::RegionQuery: {
      RegionInfoRecord info{{{uint32_t(RecordType::RegionInfo), sizeof(RegionInfoRecord)}, 0, 0, r.key.key}, 0, 0};
      RegionLender::Lent lent;
      Status s = owner_.options().cma ? owner_.lender().lend(r.key.key, serial_, peer_.nodeId, &lent) : Status::InvalidArgument;
      info.key.status = uint32_t(s);
      if (ok(s)) {
        info.address = reinterpret_cast<uint64_t>(lent.pin.dst);
        info.len = lent.pin.len;
      }
      control(&info, sizeof info);
      return true;
    }
    case RecordType::RegionInfo: {
      const RegionInfoRecord& info = r.regionInfo;
      auto waiting = asked_.find(info.key.key);
      if (waiting == asked_.end()) {
        fail(Status::PeerLost, "shm ring: a region answer to no question of ours", true);
        return false;
      }
      std::vector<PutRequest> writes = std::move(waiting->second);
      asked_.erase(waiting);
      Status s = Status(info.key.status);
      if (ok(s)) lent_[info.key.key] = Lent{info.address, info.len};
      for (const PutRequest& req : writes) {
        if (state_ == State::Dead) events.putSettled(req.id, Status::PeerLost);
        else if (ok(s)) writeRaw(req);
        else events.putSettled(req.id, s);
      }
      return state_ != State::Dead;
    }
    case RecordType::Revoke: {
      lent_.erase(r.key.key);
      KeyRecord done{{uint32_t(RecordType::RevokeAck), sizeof(KeyRecord)}, 0, 0, r.key.key};
      control(&done, sizeof done);
      return true;
    }
    default:  // RevokeAck
      if (!owner_.lender().returned(r.key.key, serial_)) {
        fail(Status::PeerLost, "shm ring: a revoke confirmed for a region not revoked", true);
        return false;
      }
      return true;
  }
}

void ShmConnection::revoke(uint64_t key) {
  if (state_ != State::Ready) return;
  KeyRecord revoke{{uint32_t(RecordType::Revoke), sizeof(KeyRecord)}, 0, 0, key};
  control(&revoke, sizeof revoke);
  pump();
}

void ShmConnection::cancelIncoming() {
  for (const Held& h : held_) {
    if (h.granted) owner_.ctx().table.cancel(h.res);
  }
  held_.clear();
  openGrants_ = 0;
  if (!incoming_.active) return;
  if (ok(incoming_.status)) {
    if (incoming_.put.flags & kFlagRaw) owner_.ctx().regions.cancel(incoming_.raw);
    else owner_.ctx().table.cancel(incoming_.res);
  }
  incoming_ = Incoming{};
}

bool ShmConnection::onAck(const AckRecord& a) {
  if (pending_.empty() || pending_.front().wireId != a.id || a.status > uint32_t(Status::Forbidden)) {
    fail(Status::PeerLost, "shm ring: an answer to no put of ours (" + std::to_string(a.id) + ")", true);
    return false;
  }
  uint64_t request = pending_.front().requestId;
  pending_.pop_front();
  owner_.ctx().events.putSettled(request, Status(a.status));
  return true;
}

// Answers first, then puts, as far as the ring has room; a kick if the peer sleeps. Blocked,
// it asks the peer for a kick once room frees up, then tries once more (the peer may have made
// room before it saw the flag).
bool ShmConnection::transmit(int* work) {
  bool corrupt = false;
  for (int attempt = 0; attempt < 2; attempt++) {
    while (!controls_.empty()) {
      const Control& c = controls_.front();
      uint8_t* at = out_.claim(c.size, &corrupt);
      if (!at) break;
      std::memcpy(at, c.bytes, c.size);
      out_.commit(c.size);
      if (c.pace == AckPace::Eager) wakePeer_ = true;
      else quietAcks_++;
      if (c.pace == AckPace::Lazy) lazyHeld_ = true;
      controls_.pop_front();
    }
    while (!corrupt && controls_.empty() && !queued_.empty()) {
      wakePeer_ = true;  // a put, even a part of one, wakes the peer
      if (!writePut(queued_.front(), &corrupt)) break;
      queued_.pop_front();
      (*work)++;
    }
    if (corrupt) {
      fail(Status::PeerLost, "shm ring: the consumer's head is not within the ring", true);
      return false;
    }
    const bool blocked = !controls_.empty() || !queued_.empty();
    if (!blocked || attempt == 1) {
      if (!blocked) storeFlag(&outControl_->producerWaiting, 0);
      break;
    }
    storeFlag(&outControl_->producerWaiting, 1);
    fullFence();
  }
  if (out_.publish()) {
    fullFence();
    if (!loadFlag(&outControl_->consumerSleeping)) {
      wakePeer_ = false;
      quietAcks_ = 0;
      lazyHeld_ = false;
    } else if (wakePeer_ || quietAcks_ >= (lazyHeld_ ? kLazyAckRun : kLateAckRun)) {
      kickPeer();
    } else {
      // Only held-back acks: they wait for the peer's next turn, or the timer of their pace.
      owner_.deferKick(this, lazyHeld_ ? AckPace::Lazy : AckPace::Late);
    }
  }
  return true;
}

void ShmConnection::kickPeer() {
  wakePeer_ = false;
  quietAcks_ = 0;
  lazyHeld_ = false;
  if (takeFlag(&outControl_->consumerSleeping)) kick(peerWakeFd_);
}

void ShmConnection::kickDeferred() {
  if (state_ == State::Ready && quietAcks_ > 0 && loadFlag(&outControl_->consumerSleeping)) kickPeer();
}

// As much of o as fits; true when all of it is in the ring.
bool ShmConnection::writePut(Outgoing& o, bool* corrupt) {
  const PutRequest& req = o.req;
  const uint64_t maxInline = ringBytes_ / 4;
  PutRecord head{};
  head.flags = (req.where.append ? kFlagAppend : 0) | (req.raw ? kFlagRaw : 0) |
               (req.ack == AckPace::Lazy ? kFlagLazyAck : 0) | (req.ack == AckPace::Late ? kFlagLateAck : 0);
  head.vaddr = req.vaddr;
  head.offset = req.where.append ? 0 : req.where.offset;
  head.len = req.len;
  if (o.notice) {
    uint8_t* at = out_.claim(sizeof head, corrupt);
    if (!at) return false;
    o.wireId = nextWireId_++;
    pending_.push_back(Pending{o.wireId, req.id, req.joined});
    head.id = o.wireId;
    head.prefix = RecordPrefix{uint32_t(RecordType::RawNotice), sizeof head};
    std::memcpy(at, &head, sizeof head);
    out_.commit(sizeof head);
    return true;
  }
  auto begin = [&] {
    if (o.wireId == 0) {
      o.wireId = nextWireId_++;
      pending_.push_back(Pending{o.wireId, req.id, req.joined});
    }
    head.id = o.wireId;
  };
  const bool inline_ = inlined(req);
  // The peer pulls from one source range: a gathered put's head goes inline, unless too long
  // (then the put is copied through the ring in chunks).
  if (!inline_ && peerPulls_ && req.gathered() && req.headLen <= kMaxFarHeadBytes && req.headLen < req.len) {
    const uint64_t bytes = roundUp8(sizeof(FarGatherPutRecord) + req.headLen);
    uint8_t* at = out_.claim(bytes, corrupt);
    if (!at) return false;
    begin();
    if (shareArena(req.data, req.len - req.headLen)) {
      head.flags |= kFlagArena;
      noteArenaUsed();
    } else if (!req.raw) {
      mayBeGranted(req.data, req.len - req.headLen);
    }
    head.prefix = RecordPrefix{uint32_t(RecordType::FarGatherPut), uint32_t(bytes)};
    FarGatherPutRecord far{head, reinterpret_cast<uint64_t>(req.data), req.headLen};
    std::memcpy(at, &far, sizeof far);
    std::memcpy(at + sizeof far, req.head, req.headLen);
    out_.commit(bytes);
    return true;
  }
  if (inline_ || (peerPulls_ && !req.gathered())) {
    const uint64_t bytes = inline_ ? roundUp8(sizeof(PutRecord) + req.len) : sizeof(FarPutRecord);
    uint8_t* at = out_.claim(bytes, corrupt);
    if (!at) return false;
    begin();
    head.prefix = RecordPrefix{uint32_t(inline_ ? RecordType::Put : RecordType::FarPut), uint32_t(bytes)};
    if (inline_) {
      std::memcpy(at, &head, sizeof head);
      req.copyTo(at + sizeof head);
    } else {
      if (shareArena(req.data, req.len)) {
        head.flags |= kFlagArena;
        noteArenaUsed();
      } else if (!req.raw) {
        mayBeGranted(req.data, req.len);
      }
      FarPutRecord far{head, reinterpret_cast<uint64_t>(req.data)};
      std::memcpy(at, &far, sizeof far);
    }
    out_.commit(bytes);
    return true;
  }
  // Chunks of up to a quarter ring each, as room allows.
  while (o.sent < req.len) {
    const uint64_t len = std::min(maxInline, req.len - o.sent);
    const uint64_t bytes = roundUp8(sizeof(ChunkPutRecord) + len);
    uint8_t* at = out_.claim(bytes, corrupt);
    if (!at) return false;
    begin();
    head.prefix = RecordPrefix{uint32_t(RecordType::ChunkPut), uint32_t(bytes)};
    ChunkPutRecord chunk{head, o.sent, len};
    std::memcpy(at, &chunk, sizeof chunk);
    req.copyRange(at + sizeof chunk, o.sent, len);
    out_.commit(bytes);
    o.sent += len;
  }
  return true;
}

void ShmConnection::fail(Status status, const std::string& why, bool protocolError) {
  if (state_ == State::Dead) return;
  const bool wasReady = state_ == State::Ready;
  state_ = State::Dead;
  release();
  // Sent puts were sent to a ready peer: it is lost. One never sent was aimed at a node
  // known before (by incarnation, or dialed again to reach it) when that node is gone.
  auto& events = owner_.ctx().events;
  RVMA_DEBUG_LOG(connectionEndLine("shm", dialer_, peer_.nodeId, dialer_ ? address_ : "a peer", wasReady, why,
                                   protocolError ? "protocol error" : status == Status::Auth ? "authentication" : ""));
  // The loss before the puts it fails (as tcp): a listener learns why before the first rejection.
  if (wasReady && status != Status::Closed) events.peerLost(peer_.nodeId, peer_.incarnation, why);
  // A refused authentication says why on every put it fails, as the connect does.
  auto settle = [&](uint64_t id, Status s) {
    if (s == Status::Auth) events.putSettled(id, s, why);
    else events.putSettled(id, s);
  };
  for (const Pending& p : pending_) settle(p.requestId, status);
  for (const Outgoing& o : queued_) {
    if (o.wireId != 0) continue;  // a partly written one is in pending_
    bool gone = status == Status::NoPeer && (o.req.incarnation != 0 || !expectedNode_.empty());
    settle(o.req.id, gone ? Status::PeerLost : status);
  }
  for (auto& [key, writes] : asked_) {
    for (const PutRequest& req : writes) settle(req.id, status);
  }
  asked_.clear();
  pending_.clear();
  queued_.clear();
  controls_.clear();
  lent_.clear();
  if (protocolError) events.protocolError(peer_.nodeId.empty() ? "shm peer" : peer_.nodeId, why);
  if (status == Status::Auth) {
    // As tcp: the dialer names the address it dialed and the node that answered there; the
    // acceptor (no address to name) the node the peer claimed.
    const std::string claimed = peer_.nodeId.empty() ? "" : " (it claimed node \"" + peer_.nodeId + "\")";
    if (dialer_) events.authFailed(address_, why + claimed);
    else events.authFailed(peer_.nodeId.empty() ? "shm peer" : peer_.nodeId, why);
  }
  owner_.onDead(this, wasReady, status, why);
}

}  // namespace rvma
