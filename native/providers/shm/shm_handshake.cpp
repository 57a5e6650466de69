// A connection's handshake: Offer, Accept and Confirm (shm_hello.h), the peer's identity, its proofs.
#include <unistd.h>

#include "shm_connection.h"
#include "shm_provider.h"

namespace rvma {

using namespace shm;

namespace {
// The proofs name the transport and its protocol version: a proof made for tcp, or for
// another version of this handshake, does not verify here.
constexpr auth::Context kAuthContext{"shm", kVersion};
}  // namespace

Hello ShmConnection::hello(HelloKind kind, uint32_t flags) const {
  Hello h;
  h.kind = kind;
  h.flags = flags | (auth().enabled() ? kHelloFlagAuth : 0);
  h.nonce = nonce_;
  h.incarnation = owner_.incarnation();
  h.ringBytes = kind == HelloKind::Offer ? ringBytes_ : 0;
  h.probeAddress = owner_.probeAddress();
  h.probeValue = owner_.probeValue();
  h.nodeId = owner_.ctx().nodeId;
  return h;
}

// Who the peer is, by the kernel (pid) and by its hello (peer_: node id, incarnation).
bool ShmConnection::adoptPeer() {
  uid_t uid;
  if (!peerCredentials(sock_, &peerPid_, &uid)) {
    fail(Status::NoPeer, "shm: cannot tell which process is at the other end", false);
    return false;
  }
  if (!expectedNode_.empty() && peer_.nodeId != expectedNode_) {
    fail(Status::NoPeer, "shm: node \"" + peer_.nodeId + "\" answers where \"" + expectedNode_ + "\" was", false);
    return false;
  }
  std::string why;
  if (!owner_.admits(peer_.nodeId, peer_.incarnation, peerPid_, &why)) {
    fail(Status::NoPeer, "shm: " + why, true);
    return false;
  }
  weCanPull_ = probe(peer_);
  return true;
}

// Reading the peer's probe word is what a far put needs: permission to read its memory.
bool ShmConnection::probe(const Hello& h) const {
  if (!owner_.options().cma) return false;
  uint64_t value = 0;
  return pull(peerPid_, reinterpret_cast<uint8_t*>(&value), h.probeAddress, sizeof value) == Pull::Ok &&
         value == h.probeValue;
}

bool ShmConnection::onOffer(const uint8_t* p, size_t len, std::vector<int>& fds) {
  Hello h;
  std::string why = decodeHello(p, len, HelloKind::Offer, &h);
  if (why.empty() && (fds.size() != 3 || !isEventFd(fds[1]) || !isEventFd(fds[2]))) {
    why = "shm hello: an offer needs a memfd and two eventfds";
  }
  if (why.empty()) {
    peer_ = h;  // as it claims: its Confirm proves it, when we authenticate
    // A side that does not authenticate as we do is refused before its segment is mapped.
    if (!checkAuth(h)) {
      for (int fd : fds) ::close(fd);
      return false;
    }
    ringBytes_ = h.ringBytes;
    int segment = fds[0];
    fds.erase(fds.begin());
    segment_.adopt(segment, segmentBytes(ringBytes_), &why);
    segment_.closeFd();  // the mapping is enough
  }
  if (!why.empty()) {
    for (int fd : fds) ::close(fd);
    fail(Status::NoPeer, why, true);
    return false;
  }
  peerWakeFd_ = fds[0];
  wakeFd_ = fds[1];
  attachRings(kFromDialer, kFromAcceptor);
  if (!adoptPeer()) return false;
  Hello accept = hello(HelloKind::Accept, weCanPull_ ? kHelloFlagCanPull : 0);
  if (accept.carriesProof()) accept.proof = auth().prove(kAuthContext, self(), peer());
  if (!sendMessage(sock_, encodeHello(accept))) {
    fail(Status::NoPeer, "cannot answer the shm offer", false);
    return false;
  }
  state_ = State::AwaitConfirm;
  return true;
}

bool ShmConnection::onAccept(const uint8_t* p, size_t len) {
  Hello h;
  std::string why = decodeHello(p, len, HelloKind::Accept, &h);
  if (!why.empty()) {
    fail(Status::NoPeer, why, true);
    return false;
  }
  if (h.refused()) {
    authFail(refusalWhy(h));
    return false;
  }
  peer_ = h;
  // The acceptor's proof verifies before ours goes out, and before we read its probe.
  if (!checkAuth(h) || !adoptPeer()) return false;
  peerPulls_ = owner_.options().cma && (h.flags & kHelloFlagCanPull) != 0;  // cma: false keeps CMA off both ways
  Hello confirm = hello(HelloKind::Confirm, weCanPull_ ? kHelloFlagCanPull : 0);
  if (confirm.carriesProof()) confirm.proof = auth().prove(kAuthContext, self(), peer());
  if (!sendMessage(sock_, encodeHello(confirm))) {
    fail(Status::NoPeer, "cannot confirm the shm connection", false);
    return false;
  }
  becomeReady();
  return state_ != State::Dead;
}

bool ShmConnection::onConfirm(const uint8_t* p, size_t len) {
  Hello h;
  std::string why = decodeHello(p, len, HelloKind::Confirm, &h);
  if (why.empty() && h.refused()) {
    authFail(refusalWhy(h));
    return false;
  }
  if (why.empty() && (h.nodeId != peer_.nodeId || h.incarnation != peer_.incarnation)) {
    why = "shm hello: the confirmation names another node than the offer";
  }
  if (!why.empty()) {
    fail(Status::NoPeer, why, true);
    return false;
  }
  // Nothing of the rings is read before the dialer's proof verifies.
  if (!checkAuth(h)) return false;
  peerPulls_ = owner_.options().cma && (h.flags & kHelloFlagCanPull) != 0;  // cma: false keeps CMA off both ways
  becomeReady();
  return state_ != State::Dead;
}

// The acceptor may refuse our Confirm after we became ready: its refused Accept is the one
// message the socket may carry after the handshake.
bool ShmConnection::onLateRefusal(const uint8_t* p, size_t len) {
  Hello h;
  if (!decodeHello(p, len, HelloKind::Accept, &h).empty() || !h.refused()) {
    fail(Status::PeerLost, "shm: a message on the socket after the handshake", true);
    return false;
  }
  authFail(refusalWhy(h));
  return false;
}

const auth::PeerAuth& ShmConnection::auth() const { return owner_.ctx().auth; }

auth::Party ShmConnection::self() const {
  return auth::Party{dialer_ ? auth::Role::Dialer : auth::Role::Acceptor, nonce_, owner_.ctx().nodeId,
                     owner_.incarnation()};
}

auth::Party ShmConnection::peer() const {
  return auth::Party{dialer_ ? auth::Role::Acceptor : auth::Role::Dialer, peer_.nonce, peer_.nodeId,
                     peer_.incarnation};
}

bool ShmConnection::checkAuth(const Hello& h) {
  if (h.authenticates() != auth().enabled()) {
    refuse(auth::mismatch(auth().enabled()));
    return false;
  }
  if (h.carriesProof() && !auth().verify(kAuthContext, peer(), self(), h.proof.data())) {
    refuse(auth::kBadProof);
    return false;
  }
  return true;
}

void ShmConnection::refuse(const std::string& why) {
  // Best effort: a peer that is gone already learns nothing, and needs to.
  (void)sendMessage(sock_, encodeHello(hello(dialer_ ? HelloKind::Confirm : HelloKind::Accept, kHelloFlagRefused)));
  authFail(why);
}

std::string ShmConnection::refusalWhy(const Hello& h) const {
  if (h.authenticates() != auth().enabled()) return auth::mismatch(auth().enabled());
  if (!auth().enabled()) return "authentication failed: the peer refused the connection";
  return "authentication failed: the peer refused this endpoint's proof (the two secrets differ)";
}

void ShmConnection::tick(uint64_t nowMs) {
  if (state_ != State::Ready && state_ != State::Dead && nowMs >= deadlineMs_) {
    fail(Status::NoPeer, "the shm handshake did not complete in time", false);
  }
}

}  // namespace rvma
