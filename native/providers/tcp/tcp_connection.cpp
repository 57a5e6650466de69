// A connection's life and data pump: puts framed out, placed in, answered; keepalive; teardown.
#include "tcp_connection.h"

#include "../../core/debug_log.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tcp_provider.h"

namespace rvma {
namespace {
// Staging for headers and small payloads: one recv takes several frames, and copying a payload
// out of here costs less than a recv of its own (a syscall is 10-20 µs in the VMs measured).
// With 8 KiB, a ring of 16 KiB frames made 2.5 recvs per frame and rank; with 64 KiB, 0.8, for
// about 10% more frames/s (bench:ring, same CPU). A payload's bytes past what this holds are
// read straight into its mailbox buffer.
constexpr size_t kRxBuffer = 64 * 1024;
// A connection starts with a staging buffer that holds its hello and proof, and grows it to
// kRxBuffer once reads fill it: a thousand idle connections, with a hello or without, cost a
// thousand of these, not of kRxBuffer (64 MiB of heap that the allocator kept once they closed).
constexpr size_t kHandshakeBuffer = 1024;
static_assert(kHandshakeBuffer >= TcpHello::kMaxBytes, "a hello and its proof fit the handshake's staging buffer");
// Frames queued for a peer besides puts: past this many, its input is not read until it reads
// some (it may be flooding us with Pings or refused puts and never reading the answers). As
// the shm provider's bound on waiting answers; each is a TxItem of about 150 bytes.
constexpr size_t kMaxQueuedFrames = 4096;
constexpr size_t kDirectMin = 32 * 1024;  // payload reads this large skip the staging buffer
// Bytes read per wake-up, so one busy peer cannot starve others. On the JS thread (loop
// progress) the budget is small: completions reach JS, and buffers get re-posted, after
// every callback, so a receiver needs few posted buffers to keep up with a fast sender.
constexpr uint64_t kThreadReadBudget = 8 << 20;
constexpr uint64_t kLoopReadBudget = 256 << 10;
// A small put is two pieces (header, payload): this many pieces carry 128 puts per write.
constexpr int kMaxIov = 256;
// Appends up to this long are read whole into the staging buffer before their range is
// reserved: one cut off with its connection leaves no hole in the buffer, so records packed
// by many senders stay parseable while connections break.
constexpr uint64_t kStagedAppendMax = 4096;
static_assert(kStagedAppendMax <= kRxBuffer, "a staged append must fit the staging buffer");
}  // namespace

TcpConnection::TcpConnection(TcpProvider& owner, int fd, bool outgoing, std::string dialAddress, uint64_t serial)
    : owner_(owner), fd_(fd), outgoing_(outgoing), dialAddress_(std::move(dialAddress)), serial_(serial),
      state_(outgoing ? State::Connecting : State::Handshake), hello_(outgoing), rxBuf_(kHandshakeBuffer) {}

TcpConnection::~TcpConnection() {
  if (fd_ >= 0) ::close(fd_);
}

void TcpConnection::start(uint64_t nowMs) {
  startedMs_ = lastRxMs_ = lastTxMs_ = nowMs;
  interest_ = EPOLLIN | (outgoing_ ? uint32_t(EPOLLOUT) : 0u);
  token_ = owner_.ctx().progress.add(fd_, interest_, [this](uint32_t events) { onIo(events); });
  if (!outgoing_) onConnected();
}

void TcpConnection::onConnected() {
  state_ = State::Handshake;
  remoteHost_ = peerHost(fd_);
  TxItem item;
  item.owned = hello_.send(owner_.hello(fd_));
  enqueue(std::move(item));
  flush();
}

void TcpConnection::put(OutPut p) {
  if (state_ == State::Dead) {  // died since it was picked (sending on another one may do that)
    owner_.send(std::move(p));
    return;
  }
  if (state_ != State::Ready || peerWindow_ == 0 ||
      (inflightBytes_ > 0 && inflightBytes_ + p.req.len > owner_.options().maxInflightBytes) || !waiting_.empty()) {
    waiting_.push_back(std::move(p));
    return;
  }
  sendPut(std::move(p));
}

void TcpConnection::sendPut(OutPut p) {
  // A put meant for, or already sent to, an earlier incarnation of the node must not reach
  // its successor.
  if ((p.req.incarnation != 0 && p.req.incarnation != peer().incarnation) ||
      (p.wireId != 0 && p.incarnation != peer().incarnation)) {
    owner_.putFinished(p, Status::PeerLost);
    return;
  }
  // Sent before into a window the peer has since forgotten: this one could not tell whether
  // the put was placed then.
  if (p.wireId != 0 && p.window != peerWindow_) {
    owner_.putFinished(p, Status::Ambiguous);
    return;
  }
  if (p.wireId == 0) {
    if (!sentTo_) sentTo_ = owner_.sentPuts().nodeOf(peer().nodeId);
    p.to = sentTo_;
    p.wireId = owner_.sentPuts().assign(sentTo_);
    p.incarnation = peer().incarnation;
  }
  p.window = peerWindow_;
  const PutRequest& req = p.req;
  inflightBytes_ += req.len;
  TxItem item;
  wire::FrameHeader f{req.raw ? wire::FrameType::RawWrite : wire::FrameType::Put};
  f.flags = uint8_t((req.where.append ? wire::kAppend : 0) | (req.ack != AckPace::Eager ? wire::kLazyAck : 0) |
                    (req.ack == AckPace::Late ? wire::kLateAck : 0));
  f.parts = req.parts;
  if (req.parts) {
    wire::encodePartExt(wire::PartExt{req.wholeOffset, req.wholeLen}, item.head + wire::kHeaderBytes);
  }
  f.id = p.wireId;
  f.vaddr = req.vaddr;
  f.offset = req.where.append ? 0 : req.where.offset;
  f.len = req.len;
  wire::encodeHeader(f, item.head);
  item.headLen = uint32_t(wire::kHeaderBytes + (req.parts ? wire::kPartExtBytes : 0));
  item.body[0] = req.head;
  item.bodyLen[0] = req.headLen;
  item.body[1] = req.data;
  item.bodyLen[1] = req.len - req.headLen;
  item.put = true;
  pending_.push_back(PendingPut{std::move(p)});
  enqueue(std::move(item));
  owner_.endOfRound(this);  // with the others of this round, in one write
}

void TcpConnection::endRound() {
  if (state_ == State::Dead) return;
  emitAcks();
  flush();
}

void TcpConnection::sendFloor(uint64_t floor) { sendControl(wire::FrameType::Floor, floor); }

void TcpConnection::sendControl(wire::FrameType type, uint64_t id) {
  TxItem item;
  wire::FrameHeader f{type};
  f.id = id;
  wire::encodeHeader(f, item.head);
  item.headLen = wire::kHeaderBytes;
  enqueue(std::move(item));
  flush();
}

// Moves waiting puts onto the wire while the in-flight cap allows.
void TcpConnection::startWaiting() {
  while (state_ == State::Ready && peerWindow_ != 0 && !waiting_.empty()) {
    const OutPut& next = waiting_.front();
    if (inflightBytes_ > 0 && inflightBytes_ + next.req.len > owner_.options().maxInflightBytes) return;
    OutPut p = std::move(waiting_.front());
    waiting_.pop_front();
    sendPut(std::move(p));
    if (state_ == State::Dead) return;
  }
}

void TcpConnection::enqueue(TxItem item) {
  if (!item.put) framesQueued_++;
  tx_.push_back(std::move(item));
}

void TcpConnection::sendFrame(const wire::FrameHeader& f, std::string owned) {
  TxItem item;
  wire::encodeHeader(f, item.head);
  item.headLen = wire::kHeaderBytes;
  item.owned = std::move(owned);
  enqueue(std::move(item));
}

void TcpConnection::flush() {
  while (!tx_.empty() && state_ != State::Dead && state_ != State::Connecting) {
    iovec iov[kMaxIov];
    int n = 0;
    for (auto it = tx_.begin(); it != tx_.end() && n + 3 <= kMaxIov; ++it) {
      uint64_t sent = it->sent;
      const uint8_t* parts[3];
      uint64_t lens[3];
      const int count = it->pieces(parts, lens);
      for (int p = 0; p < count; p++) {
        if (sent >= lens[p]) {
          sent -= lens[p];
          continue;
        }
        iov[n].iov_base = const_cast<uint8_t*>(parts[p] + sent);
        iov[n].iov_len = lens[p] - sent;
        sent = 0;
        n++;
      }
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = size_t(n);
    ssize_t written = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (written < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      fail(Status::PeerLost, std::string("send failed: ") + std::strerror(errno), false);
      return;
    }
    lastTxMs_ = TcpProvider::nowMs();
    size_t puts = 0;
    for (uint64_t left = uint64_t(written); left > 0;) {
      TxItem& front = tx_.front();
      uint64_t total = front.total();
      uint64_t take = std::min(left, total - front.sent);
      front.sent += take;
      left -= take;
      if (front.sent < total) break;
      if (front.put) {
        puts++;
      } else {
        framesQueued_--;
      }
      tx_.pop_front();
    }
    if (readPaused_ && framesQueued_ <= kMaxQueuedFrames / 2) {  // it reads again: so do we
      readPaused_ = false;
      lastRxMs_ = lastTxMs_;  // its silence while unread was ours
    }
    // Reported only once the queue's bookkeeping is done: reporting may send more.
    if (puts) {
      written_ += puts;
      finishAnswered();
    }
  }
  updateInterest();
}

void TcpConnection::updateInterest() {
  if (state_ == State::Dead) return;
  bool write = state_ == State::Connecting || !tx_.empty();
  uint32_t want = (readPaused_ ? 0u : uint32_t(EPOLLIN)) | (write ? uint32_t(EPOLLOUT) : 0u);
  if (want == interest_) return;
  interest_ = want;
  owner_.ctx().progress.modify(token_, fd_, want);
}

void TcpConnection::pauseReading(uint64_t nowMs) {
  readPaused_ = true;
  pausedMs_ = nowMs;
  updateInterest();
}

void TcpConnection::onIo(uint32_t events) {
  if (state_ == State::Connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      refused_ = err == ECONNREFUSED;
      fail(Status::NoPeer, std::string("connect to ") + dialAddress_ + " failed: " + std::strerror(err), false);
      return;
    }
    if (!(events & EPOLLOUT)) return;
    onConnected();
    if (state_ == State::Dead) return;
  }
  if (events & EPOLLOUT) {
    flush();
    if (state_ == State::Dead) return;
  }
  if (readPaused_) {
    // Not reading, the socket's hang-up or error would be reported again at once, forever.
    if (events & (EPOLLERR | EPOLLHUP)) fail(Status::PeerLost, "the connection broke while its peer read nothing", false);
    return;
  }
  if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
    if (!readSome()) return;
  }
}

// Reads what the socket has (bounded per wake-up) and places it. False once the connection died.
bool TcpConnection::readSome() {
  uint64_t budget = owner_.ctx().progress.mode() == ProgressMode::Loop ? kLoopReadBudget : kThreadReadBudget;
  while (budget > 0 && state_ != State::Dead) {
    ssize_t n;
    size_t asked;
    if (rx_ == Rx::Payload && rxStart_ == rxEnd_ && remaining_ >= kDirectMin) {
      asked = size_t(remaining_);
      n = recv(fd_, payloadDst() + got_, asked, 0);  // straight into the mailbox buffer
      if (n > 0) {
        got_ += uint64_t(n);
        remaining_ -= uint64_t(n);
        if (remaining_ == 0) finishPayload();
      }
    } else {
      if (rxStart_ == rxEnd_) rxStart_ = rxEnd_ = 0;
      // Full: the peer sends more than a handshake's worth, or a staged append needs the room.
      if (rxEnd_ == rxBuf_.size() && rxBuf_.size() < kRxBuffer && state_ == State::Ready) rxBuf_.resize(kRxBuffer);
      if (rxEnd_ == rxBuf_.size()) {
        std::memmove(rxBuf_.data(), rxBuf_.data() + rxStart_, rxEnd_ - rxStart_);
        rxEnd_ -= rxStart_;
        rxStart_ = 0;
      }
      asked = rxBuf_.size() - rxEnd_;
      n = recv(fd_, rxBuf_.data() + rxEnd_, asked, 0);
      if (n > 0) rxEnd_ += size_t(n);
      if (size_t(n) == asked && rxBuf_.size() < kRxBuffer && state_ == State::Ready) rxBuf_.resize(kRxBuffer);
    }
    if (n == 0) {
      // The peer stopped sending but may still read: the puts placed are answered first.
      emitAcks();
      flush();
      if (state_ != State::Dead) fail(Status::PeerLost, "peer closed the connection", false);
      return false;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      fail(Status::PeerLost, std::string("receive failed: ") + std::strerror(errno), false);
      return false;
    }
    lastRxMs_ = TcpProvider::nowMs();
    budget -= std::min<uint64_t>(budget, uint64_t(n));
    if (!process()) return false;
    if (framesQueued_ >= kMaxQueuedFrames) {
      pauseReading(lastRxMs_);
      break;
    }
    if (size_t(n) < asked) break;  // drained: skip the read that would only say EAGAIN
  }
  return state_ != State::Dead;
}

// Consumes staged bytes through the receive state machine. False once the connection died:
// every step may fail it, and nothing staged behind a failure is looked at.
bool TcpConnection::process() {
  for (;;) {
    if (state_ == State::Dead) return false;
    size_t avail = rxEnd_ - rxStart_;
    const uint8_t* p = rxBuf_.data() + rxStart_;
    switch (rx_) {
      case Rx::Hello: {
        const size_t need = hello_.need();
        if (avail < need) return true;
        bool done;
        std::string why = hello_.take(p, &done);
        if (!why.empty()) {
          protocolFail(why);
          return false;
        }
        if (!done) continue;
        rxStart_ += need;
        if (!onHello()) return false;
        continue;
      }
      case Rx::Proof: {
        if (avail < wire::kProofBytes) return true;
        rxStart_ += wire::kProofBytes;
        if (!onProof(p)) return false;
        continue;
      }
      case Rx::Header: {
        if (avail < wire::kHeaderBytes) return true;
        auto r = wire::decodeHeader(p, &hdr_);
        if (r != wire::DecodeResult::Ok) {
          protocolFail(std::string("bad frame: ") + wire::describe(r));
          return false;
        }
        rxStart_ += wire::kHeaderBytes;
        if (!onHeader()) return false;
        continue;
      }
      case Rx::PartExt: {
        if (avail < wire::kPartExtBytes) return true;
        rxStart_ += wire::kPartExtBytes;
        if (!onPartExt(p)) return false;
        continue;
      }
      case Rx::Payload: {
        if (avail == 0) return true;
        size_t take = size_t(std::min<uint64_t>(avail, remaining_));
        std::memcpy(payloadDst() + got_, p, take);
        rxStart_ += take;
        got_ += take;
        remaining_ -= take;
        if (remaining_ == 0) finishPayload();
        continue;
      }
      case Rx::Staged: {
        if (avail < remaining_) return true;  // readSome makes room: the staging buffer holds it
        placeStaged(p);
        continue;
      }
      case Rx::Drain: {
        if (remaining_ > 0) {
          if (avail == 0) return true;
          size_t take = size_t(std::min<uint64_t>(avail, remaining_));
          rxStart_ += take;
          remaining_ -= take;
          if (remaining_ > 0) return true;
        }
        rx_ = Rx::Header;
        continue;
      }
      case Rx::ErrorText: {
        size_t take = size_t(std::min<uint64_t>(avail, remaining_));
        errorText_.append(reinterpret_cast<const char*>(p), take);
        rxStart_ += take;
        remaining_ -= take;
        if (remaining_ > 0) return true;
        fail(Status::PeerLost, "peer reported a protocol error: " + errorText_, true);
        return false;
      }
    }
  }
}

bool TcpConnection::onHello() {
  const auth::PeerAuth& auth = owner_.ctx().auth;
  if (hello_.peerAuthenticates() != auth.enabled()) {
    authFail(auth::mismatch(auth.enabled()));
    return false;
  }
  if (!expectedNode_.empty() && peer().nodeId != expectedNode_) {
    wrongNode_ = true;
    fail(Status::PeerLost, dialAddress_ + " is now node \"" + peer().nodeId + "\", not \"" + expectedNode_ + "\"", false);
    return false;
  }
  if (!auth.enabled()) return becomeReady();
  // Our proof goes out now; nothing of the peer's but its proof is read until it verifies.
  TxItem item;
  auth::Proof proof = hello_.prove(auth);
  item.owned.assign(reinterpret_cast<const char*>(proof.data()), proof.size());
  enqueue(std::move(item));
  flush();
  rx_ = Rx::Proof;
  return state_ != State::Dead;
}

bool TcpConnection::onProof(const uint8_t* proof) {
  if (!hello_.verify(owner_.ctx().auth, proof)) {
    authFail(auth::kBadProof);
    return false;
  }
  return becomeReady();
}

bool TcpConnection::becomeReady() {
  std::string why;
  if (!owner_.admit(this, &why)) {
    protocolFail(why);
    return false;
  }
  rx_ = Rx::Header;
  state_ = State::Ready;
  window_ = owner_.attachSender(peer().nodeId, peer().incarnation);
  sendControl(wire::FrameType::Window, window_->id());
  if (state_ == State::Dead) return false;
  owner_.onHandshake(this);
  if (state_ == State::Dead) return false;
  RVMA_DEBUG_LOG(connectionUpLine("tcp", outgoing_, peer().nodeId, peer().incarnation, dialAddress_));
  startWaiting();
  return state_ != State::Dead;
}

bool TcpConnection::onHeader() {
  switch (hdr_.type) {
    case wire::FrameType::Put:
      if (hdr_.parts) {
        rx_ = Rx::PartExt;
        return true;
      }
      return onPut(false);
    case wire::FrameType::RawWrite:
      return onPut(true);
    case wire::FrameType::Ack:
    case wire::FrameType::Nack: {
      // Answers come in the order the puts went out: this one is for the oldest unanswered.
      if (answered_ >= pending_.size() || pending_[answered_].put.wireId != hdr_.id) {
        protocolFail("answer for an unknown put id " + std::to_string(hdr_.id));
        return false;
      }
      // decodeHeader let through only the statuses a receiver refuses with.
      answer(hdr_.id, hdr_.type == wire::FrameType::Ack ? Status::Ok : Status(hdr_.status));
      return state_ != State::Dead;
    }
    case wire::FrameType::Acks:
      return onAcks();
    case wire::FrameType::Floor:
      owner_.onFloor(window_, hdr_.id);
      return state_ != State::Dead;
    case wire::FrameType::Window:
      if (peerWindow_ != 0) {
        protocolFail("a second window on one connection");
        return false;
      }
      peerWindow_ = hdr_.id;
      // Connected once the peer took us: it names a window only after its own checks (it
      // may refuse a node id that another incarnation holds).
      for (uint64_t request : connectRequests_) owner_.ctx().events.connected(request, Status::Ok, peer().nodeId);
      connectRequests_.clear();
      startWaiting();
      return state_ != State::Dead;
    case wire::FrameType::Ping: {
      wire::FrameHeader pong{wire::FrameType::Pong};
      sendFrame(pong);
      flush();
      return state_ != State::Dead;
    }
    case wire::FrameType::Pong:
      return true;
    case wire::FrameType::Error:
      rx_ = Rx::ErrorText;
      remaining_ = hdr_.len;
      errorText_.clear();
      if (remaining_ == 0) {
        fail(Status::PeerLost, "peer reported a protocol error", true);
        return false;
      }
      return true;
  }
  return true;
}

// Whether the put in hdr_ is new from its sender, or a re-send to answer as the first time.
// False once the connection died; *proceed: place it.
bool TcpConnection::admit(bool part, bool* proceed) {
  *proceed = false;
  for (int attempt = 0; attempt < 2; attempt++) {
    PutWindow::Admission a = window_->admit(hdr_.id, part, this, serial_);
    switch (a.kind) {
      case PutWindow::Admission::New:
        *proceed = true;
        return true;
      case PutWindow::Admission::Answer:
        return answerAndDrain(a.status);
      case PutWindow::Admission::Ambiguous:
        return answerAndDrain(Status::Ambiguous);
      case PutWindow::Admission::Busy:
        // The sender re-sent it here: the connection still writing it is one it gave up on.
        owner_.supersede(a.writer);
        if (state_ == State::Dead) return false;
        continue;
      case PutWindow::Admission::Twice:
        break;
    }
    break;
  }
  protocolFail("put " + std::to_string(hdr_.id) + " sent twice on one connection");
  return false;
}

bool TcpConnection::onPut(bool raw) {
  bool proceed;
  if (!admit(false, &proceed) || !proceed) return state_ != State::Dead;
  Status s = Status::Ok;
  if (hdr_.len > owner_.options().maxPutBytes) {
    s = Status::TooLarge;
  } else if (raw) {
    s = owner_.ctx().regions.reserve(hdr_.vaddr, hdr_.offset, hdr_.len, peer().nodeId, &rawRes_);
  } else if ((hdr_.flags & wire::kAppend) && hdr_.len <= kStagedAppendMax) {
    rx_ = Rx::Staged;
    remaining_ = hdr_.len;
    return true;
  } else {
    Placement where{(hdr_.flags & wire::kAppend) != 0, hdr_.offset};
    s = owner_.ctx().table.reserve(hdr_.vaddr, where, hdr_.len, peer().nodeId, &res_);
  }
  if (!ok(s)) {
    window_->settle(hdr_.id, s);
    return refuse(s);
  }
  return beginPayload();
}

bool TcpConnection::onPartExt(const uint8_t* p) {
  wire::PartExt ext;
  if (wire::decodePartExt(p, hdr_, &ext) != wire::DecodeResult::Ok) {
    protocolFail("bad part extension: part outside its put");
    return false;
  }
  bool proceed;
  if (!admit(true, &proceed) || !proceed) return state_ != State::Dead;
  if (ext.putLen > owner_.options().maxPutBytes) {
    window_->settle(hdr_.id, Status::TooLarge);
    return refuse(Status::TooLarge);
  }
  for (int attempt = 0; attempt < 2; attempt++) {
    SplitReceiver::Started st = window_->splits().begin(hdr_.id, hdr_, ext, this, serial_);
    switch (st.what) {
      case SplitReceiver::Begin::Write:
        splitPart_ = true;
        partDst_ = st.dst;
        return beginPayload();
      case SplitReceiver::Begin::Refuse:
        window_->settle(hdr_.id, st.status);
        return refuse(st.status);
      case SplitReceiver::Begin::Landed:
        return answerAndDrain(Status::Ok);
      case SplitReceiver::Begin::Busy:
        owner_.supersede(st.writer);
        if (state_ == State::Dead) return false;
        continue;
      case SplitReceiver::Begin::Violation:
        break;
    }
    break;
  }
  protocolFail("part " + std::to_string(hdr_.id) + " contradicts earlier parts of its put");
  return false;
}

// The destination is reserved: the frame's payload goes there as it arrives.
bool TcpConnection::beginPayload() {
  rx_ = Rx::Payload;
  remaining_ = hdr_.len;
  got_ = 0;
  if (remaining_ == 0) finishPayload();
  return state_ != State::Dead;
}

// Refused: tell the sender now, then discard its payload as it streams in.
bool TcpConnection::refuse(Status s) { return answerAndDrain(s); }

// Answered without being placed (refused, or a re-send of a put settled before): the
// answer goes now, the payload is discarded as it streams in.
bool TcpConnection::answerAndDrain(Status s) {
  sendAnswer(hdr_.id, s);
  rx_ = Rx::Drain;
  remaining_ = hdr_.len;
  return state_ != State::Dead;
}

// Answers keep the order of the puts: an ack joins the run, a refusal ends it. Both go out at
// the end of the round, so one frame answers all the puts placed from one read. The ack of a
// lazy or late put (hdr_) waits for company instead: the run goes with the next eager answer or
// frame on this connection, once kLazyAckRun acks (kLateAckRun when every held ack is late) or
// kLazyAckBytes wait, or when the provider's timer for the pace fires (kLazyAckDelayMs or
// kLateAckDelayMs).
void TcpConnection::sendAnswer(uint64_t putId, Status s) {
  if (ok(s)) {
    if (acksRun_ == wire::kMaxAcksRun) emitAcks();
    acksRun_++;
    acksLast_ = putId;
    if (hdr_.flags & wire::kLazyAck) {
      lazyAcks_++;
      lazyBytes_ += hdr_.len;
      if (!(hdr_.flags & wire::kLateAck)) lazyHeld_ = true;
      if (lazyAcks_ < (lazyHeld_ ? kLazyAckRun : kLateAckRun) && lazyBytes_ < kLazyAckBytes) {
        owner_.deferAcks(this, lazyHeld_ ? AckPace::Lazy : AckPace::Late);
        return;
      }
    }
  } else {
    emitAcks();
    wire::FrameHeader f{wire::FrameType::Nack};
    f.id = putId;
    f.status = uint16_t(s);
    sendFrame(f);
  }
  owner_.endOfRound(this);
}

void TcpConnection::emitAcks() {
  if (acksRun_ == 0) return;
  uint64_t run = acksRun_;
  acksRun_ = 0;
  lazyAcks_ = 0;
  lazyBytes_ = 0;
  lazyHeld_ = false;
  // Acks still queued, not started, answer the puts just before these: one frame says both.
  // A peer slow to read then costs one frame per refusal, not one per read of its puts.
  TxItem* last = tx_.empty() ? nullptr : &tx_.back();
  bool joins = last && last->acks > 0 && last->sent == 0 && last->acks + run <= wire::kMaxAcksRun;
  if (joins) run += last->acks;
  wire::FrameHeader f{run == 1 ? wire::FrameType::Ack : wire::FrameType::Acks};
  f.id = acksLast_;
  if (run > 1) f.offset = run;
  if (joins) {
    wire::encodeHeader(f, last->head);
    last->acks = run;
    return;
  }
  TxItem item;
  wire::encodeHeader(f, item.head);
  item.headLen = wire::kHeaderBytes;
  item.acks = run;
  enqueue(std::move(item));
}

// Acks: the next `offset` unanswered puts are placed, the last of them put `id`.
bool TcpConnection::onAcks() {
  const uint64_t n = hdr_.offset;
  if (pending_.size() - answered_ < n || pending_[answered_ + n - 1].put.wireId != hdr_.id) {
    protocolFail("acks for " + std::to_string(n) + " puts up to id " + std::to_string(hdr_.id) +
                 ", which were not all sent here unanswered");
    return false;
  }
  for (uint64_t i = 0; i < n && state_ != State::Dead; i++) answer(pending_[answered_].put.wireId, Status::Ok);
  return state_ != State::Dead;
}

// A small append, all in the staging buffer at p: placed at once, or refused.
void TcpConnection::placeStaged(const uint8_t* p) {
  uint64_t len = remaining_;
  rxStart_ += len;
  remaining_ = 0;
  rx_ = Rx::Header;
  Status s = owner_.ctx().table.deliver(hdr_.vaddr, Placement{true, 0}, p, len, peer().nodeId);
  window_->settle(hdr_.id, s);
  sendAnswer(hdr_.id, s);
}

uint8_t* TcpConnection::payloadDst() const {
  if (splitPart_) return partDst_;
  return hdr_.type == wire::FrameType::RawWrite ? rawRes_.dst : res_.dst;
}

// The whole payload is in the buffer: count it, then acknowledge. A part of a split put
// counts as a put only when it is the last of its parts to land.
void TcpConnection::finishPayload() {
  if (splitPart_) {
    splitPart_ = false;
    switch (window_->splits().end(hdr_.id, hdr_.offset)) {
      case SplitReceiver::End::Violation:
        window_->settle(hdr_.id, Status::PeerLost);  // parts still coming get no new reservation
        protocolFail("parts of put " + std::to_string(hdr_.id) + " do not cover the put");
        return;
      case SplitReceiver::End::Placed:
        window_->settle(hdr_.id, Status::Ok);
        break;
      case SplitReceiver::End::Partial:
        break;
    }
  } else if (hdr_.type == wire::FrameType::RawWrite) {
    owner_.ctx().regions.commit(rawRes_);
    rawRes_ = RegionReservation{};
    window_->settle(hdr_.id, Status::Ok);
  } else {
    owner_.ctx().table.commit(res_);
    res_ = Reservation{};
    window_->settle(hdr_.id, Status::Ok);
  }
  rx_ = Rx::Header;
  sendAnswer(hdr_.id, Status::Ok);
}

void TcpConnection::answer(uint64_t putId, Status status) {
  PendingPut& p = pending_[answered_++];
  p.status = status;
  inflightBytes_ -= p.put.req.len;
  finishAnswered();
  if (state_ != State::Dead) startWaiting();
}

// Reported upward only when the peer answered and the bytes left our send queue: until
// then the sender's memory may still be read.
void TcpConnection::finishAnswered() {
  while (answered_ > 0 && written_ > 0) {
    PendingPut done = std::move(pending_.front());
    pending_.pop_front();
    answered_--;
    written_--;
    owner_.putFinished(done.put, done.status);
    if (state_ == State::Dead) return;  // fail() took the rest
  }
}

void TcpConnection::protocolFail(const std::string& why) {
  // What was placed before the violation is answered first, as the peer may still read it.
  if (state_ != State::Connecting) {
    emitAcks();
    flush();
    if (state_ == State::Dead) return;
  }
  sendErrorText(why);
  fail(Status::PeerLost, why, true);
}

void TcpConnection::authFail(const std::string& why) {
  sendErrorText(why);  // the peer learns why; it has our proof (if any) already
  authRefused_ = true;
  fail(Status::Auth, why, false);
}

void TcpConnection::sendErrorText(const std::string& why) {
  wire::FrameHeader err{wire::FrameType::Error};
  std::string text = why.substr(0, wire::kMaxErrorTextBytes);
  err.len = text.size();
  // Best effort, one non-blocking write: the peer may not even speak this protocol.
  uint8_t head[wire::kHeaderBytes];
  wire::encodeHeader(err, head);
  if (tx_.empty() && state_ != State::Connecting) {
    iovec iov[2] = {{head, sizeof head}, {text.data(), text.size()}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n;
  }
}

void TcpConnection::fail(Status status, const std::string& why, bool protocolError) {
  if (state_ == State::Dead) return;
  bool wasReady = state_ == State::Ready;
  // A transport failure of a ready connection is not the peer's loss yet: the provider may
  // reconnect (see TcpProvider::onDead).
  bool transient = wasReady && !protocolError && status != Status::Closed;
  state_ = State::Dead;
  owner_.ctx().progress.remove(token_, fd_);
  ::close(fd_);
  fd_ = -1;
  owner_.unlink(this, wasReady, transient);  // before anything below routes a put again
  // A put half-written into a mailbox never counts: no epoch ends on partial data. Its
  // sender may send it again; then it is placed anew (a split put's part rewrites its slice).
  if (rx_ == Rx::Payload && res_.mailbox) owner_.ctx().table.cancel(res_);
  if (rx_ == Rx::Payload && rawRes_.region) owner_.ctx().regions.cancel(rawRes_);
  if (window_ && (rx_ == Rx::Staged || (rx_ == Rx::Payload && (res_.mailbox || rawRes_.region)))) {
    window_->cancel(hdr_.id);
  }
  if (window_ && rx_ == Rx::Payload && splitPart_) window_->splits().abort(hdr_.id, hdr_.offset);
  window_.reset();
  splitPart_ = false;
  res_ = Reservation{};
  rawRes_ = RegionReservation{};
  rxStart_ = rxEnd_ = 0;  // input staged behind the failure is never processed
  remaining_ = 0;
  tx_.clear();
  framesQueued_ = 0;
  // Answered puts are settled whatever happens now; the others go back to the provider.
  auto pending = std::move(pending_);
  pending_.clear();
  size_t answered = answered_;
  answered_ = written_ = 0;
  inflightBytes_ = 0;
  std::vector<OutPut> unanswered;
  unanswered.reserve(pending.size() - answered + waiting_.size());
  for (size_t i = answered; i < pending.size(); i++) unanswered.push_back(std::move(pending[i].put));
  for (auto& p : waiting_) unanswered.push_back(std::move(p));
  waiting_.clear();
  for (size_t i = 0; i < answered; i++) owner_.putFinished(pending[i].put, pending[i].status);
  std::string who = peer().nodeId.empty() ? dialAddress_ : peer().nodeId;
  RVMA_DEBUG_LOG(connectionEndLine("tcp", outgoing_, who, "a peer", wasReady, why,
                                   protocolError ? "protocol error" : status == Status::Auth ? "authentication" : ""));
  if (protocolError) owner_.ctx().events.protocolError(who, why);
  if (status == Status::Auth) {
    owner_.ctx().events.authFailed(dialAddress_, peer().nodeId.empty() ? why : why + " (it claimed node \"" + peer().nodeId + "\")");
  }
  for (uint64_t request : connectRequests_) owner_.ctx().events.connected(request, status, why);
  connectRequests_.clear();
  owner_.onDead(this, wasReady, transient, status, why, std::move(unanswered));
}

void TcpConnection::tick(uint64_t nowMs, uint64_t missedMs) {
  const TcpOptions& o = owner_.options();
  TickGap::credit(&startedMs_, missedMs, nowMs);
  TickGap::credit(&lastRxMs_, missedMs, nowMs);
  // nowMs was read when the tick began: what other connections' ticks made this one do
  // since (a put sent again over it, say) can be later.
  auto since = [nowMs](uint64_t t) { return nowMs > t ? nowMs - t : 0; };
  if (state_ == State::Connecting || state_ == State::Handshake) {
    if (since(startedMs_) > o.connectTimeoutMs) {
      fail(Status::NoPeer, "connection to " + (dialAddress_.empty() ? "peer" : dialAddress_) + " timed out", false);
    }
    return;
  }
  if (state_ != State::Ready) return;
  if (readPaused_) {
    TickGap::credit(&pausedMs_, missedMs, nowMs);
    if (since(pausedMs_) > o.peerTimeoutMs) {
      protocolFail("the peer has not read its answers for " + std::to_string(since(pausedMs_)) + " ms (" +
                   std::to_string(framesQueued_) + " frames waiting for it)");
    }
    return;  // silent because it is not read: not lost for that
  }
  if (peerWindow_ == 0 && since(startedMs_) > o.connectTimeoutMs) {
    protocolFail("the peer named no window for our puts within " + std::to_string(o.connectTimeoutMs) + " ms");
    return;
  }
  if (since(lastRxMs_) > o.peerTimeoutMs) {
    fail(Status::PeerLost, "peer silent for " + std::to_string(since(lastRxMs_)) + " ms", false);
    return;
  }
  if (since(lastTxMs_) >= o.keepaliveMs && tx_.empty()) {
    wire::FrameHeader ping{wire::FrameType::Ping};
    sendFrame(ping);
    flush();
  }
}

}  // namespace rvma
