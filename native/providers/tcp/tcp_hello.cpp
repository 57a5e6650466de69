// The tcp handshake's hellos read off the stream, and the proofs over them.
#include "tcp_hello.h"

#include <cstring>

namespace rvma {
namespace {
constexpr auth::Context kAuthContext{"tcp", wire::kVersion};
static_assert(wire::kNonceBytes == auth::kNonceBytes && wire::kProofBytes == auth::kProofBytes, "one nonce, one proof");
}  // namespace

std::string TcpHello::send(wire::Hello ours) {
  ours_ = std::move(ours);
  return wire::encodeHello(ours_);
}

std::string TcpHello::take(const uint8_t* p, bool* done) {
  *done = false;
  if (need_ == wire::kHelloBytes) {
    auto r = wire::decodeHelloFixed(p, &peer_, &nodeIdLen_, &addressLen_);
    if (r != wire::DecodeResult::Ok) {
      return std::string("handshake refused: ") + wire::describe(r) +
             (r == wire::DecodeResult::BadVersion
                  ? " (peer speaks " + std::to_string(peer_.version) + ", this node speaks " +
                        std::to_string(wire::kVersion) + ")"
                  : "");
    }
    need_ += wire::kNonceBytes + nodeIdLen_ + addressLen_;
    return "";
  }
  const uint8_t* rest = p + wire::kHelloBytes;
  std::memcpy(peer_.nonce.data(), rest, wire::kNonceBytes);
  rest += wire::kNonceBytes;
  peer_.nodeId.assign(reinterpret_cast<const char*>(rest), nodeIdLen_);
  peer_.listenAddress.assign(reinterpret_cast<const char*>(rest + nodeIdLen_), addressLen_);
  *done = true;
  return "";
}

auth::Party TcpHello::ourParty() const {
  return auth::Party{outgoing_ ? auth::Role::Dialer : auth::Role::Acceptor, ours_.nonce, ours_.nodeId,
                     ours_.incarnation};
}

auth::Party TcpHello::peerParty() const {
  return auth::Party{outgoing_ ? auth::Role::Acceptor : auth::Role::Dialer, peer_.nonce, peer_.nodeId,
                     peer_.incarnation};
}

auth::Proof TcpHello::prove(const auth::PeerAuth& auth) const {
  return auth.prove(kAuthContext, ourParty(), peerParty());
}

bool TcpHello::verify(const auth::PeerAuth& auth, const uint8_t* proof) const {
  return auth.verify(kAuthContext, peerParty(), ourParty(), proof);
}

}  // namespace rvma
