// A connection's handshake: the hellos, the proofs of peer authentication (Auth), the step to ready.
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "../../core/debug_log.h"
#include "verbs_connection.h"
#include "verbs_provider.h"

namespace rvma {

using namespace verbs;

namespace {
constexpr auth::Context kAuthContext{"verbs", kVersion};
static_assert(kNonceBytes == auth::kNonceBytes && kProofBytes == auth::kProofBytes, "one nonce, one proof");

// "rdma://IP:PORT" of a socket address, "" for another family.
std::string rdmaUrl(const sockaddr* sa, uint16_t port) {
  char ip[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, ip, sizeof ip);
    return "rdma://" + std::string(ip) + ":" + std::to_string(port);
  }
  if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, ip, sizeof ip);
    return "rdma://[" + std::string(ip) + "]:" + std::to_string(port);
  }
  return {};
}
}  // namespace

void VerbsConnection::sendHello() {
  uint32_t index;
  uint8_t* p = ctrlTx(&index);
  if (!p) return;
  const std::string& node = owner_.ctx().nodeId;
  HelloMsg m{};
  m.h = CtrlHeader{kMagic, uint16_t(MsgType::Hello), 0};
  m.version = kVersion;
  m.nodeIdLen = uint16_t(node.size());
  m.slots = slots_;
  m.slotBytes = slotBytes_;
  m.ringRkey = ringMr_->rkey;
  m.incarnation = owner_.incarnation();
  m.ringAddr = uintptr_t(ring_.get());
  m.listenPort = owner_.listenPort();
  m.maxPutBytes = owner_.options().maxPutBytes;
  m.flags = authenticates() ? kHelloAuth : 0;
  std::memcpy(m.nonce, nonce_.data(), sizeof m.nonce);
  std::memcpy(p, &m, sizeof m);
  std::memcpy(p + sizeof m, node.data(), node.size());
  helloSent_ = true;
  sendCtrl(index, uint32_t(sizeof m + node.size()));
}

void VerbsConnection::onHello(const CtrlMsg& msg) {
  const HelloMsg& m = msg.hello;
  peerNode_ = msg.nodeId;
  if (((m.flags & kHelloAuth) != 0) != authenticates()) return authFail(auth::mismatch(authenticates()));
  if (!expectedNode_.empty() && peerNode_ != expectedNode_) {
    return fail(Status::PeerLost, address_ + " is now node \"" + peerNode_ + "\", not \"" + expectedNode_ + "\"");
  }
  peerIncarnation_ = m.incarnation;
  peerRing_ = m.ringAddr;
  peerRkey_ = m.ringRkey;
  peerSlots_ = m.slots;
  peerSlotBytes_ = m.slotBytes;
  peerListenPort_ = m.listenPort;
  peerMaxPut_ = m.maxPutBytes;
  std::memcpy(peerNonce_.data(), m.nonce, peerNonce_.size());
  window_ = std::min(slots_, peerSlots_);
  eagerMax_ = std::min(slotBytes_, peerSlotBytes_) - uint32_t(sizeof(EagerHeader));
  for (uint32_t i = window_; i-- > 0;) freeSlots_.push_back(i);
  helloReceived_ = true;
  maybeProve();
  maybeReady();
}

std::string VerbsConnection::peerListenAddress() const {
  if (!peerListenPort_) return {};
  return rdmaUrl(rdma_get_peer_addr(cmId_.get()), peerListenPort_);
}

// Who failed authentication, for the authFailed event: the address we dialed, or where an
// accepted peer connected from.
std::string VerbsConnection::peerLabel() const {
  if (!address_.empty()) return address_;
  std::string from = rdmaUrl(rdma_get_peer_addr(cmId_.get()), ntohs(rdma_get_dst_port(cmId_.get())));
  return from.empty() ? "rdma peer" : from;
}

void VerbsConnection::onEstablished() {
  established_ = true;
  shortenRnrWait();
  sendHello();
  if (authFailing_) return finishAuthFail();  // the peer's hello came first and failed: ours tells it why
  maybeProve();
  maybeReady();
}

auth::Party VerbsConnection::self() const {
  return auth::Party{outgoing_ ? auth::Role::Dialer : auth::Role::Acceptor, nonce_, owner_.ctx().nodeId,
                     owner_.incarnation()};
}

auth::Party VerbsConnection::peer() const {
  return auth::Party{outgoing_ ? auth::Role::Acceptor : auth::Role::Dialer, peerNonce_, peerNode_, peerIncarnation_};
}

// Our proof covers both nonces, so it goes once our hello is out and the peer's is in.
void VerbsConnection::maybeProve() {
  if (!authenticates() || proofSent_ || authFailing_ || state_ == State::Dead || !established_ || !helloReceived_) {
    return;
  }
  uint32_t index;
  uint8_t* p = ctrlTx(&index);
  if (!p) return;
  AuthMsg m{CtrlHeader{kMagic, uint16_t(MsgType::Auth), 0}, {}};
  auth::Proof proof = owner_.ctx().auth.prove(kAuthContext, self(), peer());
  std::memcpy(m.proof, proof.data(), sizeof m.proof);
  std::memcpy(p, &m, sizeof m);
  proofSent_ = true;
  sendCtrl(index, sizeof m);
}

void VerbsConnection::onAuth(const AuthMsg& m) {
  if (!owner_.ctx().auth.verify(kAuthContext, peer(), self(), m.proof)) return authFail(auth::kBadProof);
  peerProven_ = true;
  maybeReady();
}

void VerbsConnection::authFail(const std::string& why) {
  if (state_ == State::Dead || authFailing_) return;
  authFailing_ = true;
  authWhy_ = why;
  finishAuthFail();
}

// Closing at once would flush our hello or proof unsent (the peer would only see the
// disconnect), so the close waits for every send to complete; the connect timeout bounds it.
void VerbsConnection::finishAuthFail() {
  if (!authFailing_ || state_ == State::Dead || !established_ || sqInflight_ > 0 || !backlog_.empty()) return;
  fail(Status::Auth, authWhy_);
}

void VerbsConnection::maybeReady() {
  if (state_ == State::Dead || state_ == State::Ready || !established_ || !helloReceived_ || authFailing_) return;
  if (authenticates() && !(proofSent_ && peerProven_)) return;
  state_ = State::Ready;
  heardMs_ = VerbsProvider::nowMs();
  RVMA_DEBUG_LOG(connectionUpLine("verbs", outgoing_, peerNode_, peerIncarnation_, address_));
  owner_.onReady(this);
  for (uint64_t request : connectRequests_) owner_.ctx().events.connected(request, Status::Ok, peerNode_);
  connectRequests_.clear();
  startWaiting();
}

}  // namespace rvma
