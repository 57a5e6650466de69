// A tcp connection's handshake: our hello, the peer's as read off the stream, the proofs over both.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "../../auth/peer_auth.h"
#include "tcp_frames.h"

namespace rvma {

class TcpHello {
 public:
  // A hello and the proof after it, at their longest: what the receive buffer must hold.
  static constexpr size_t kMaxBytes = wire::kHelloBytes + wire::kNonceBytes + wire::kMaxNodeIdBytes +
                                      wire::kMaxAddressBytes + wire::kProofBytes;

  explicit TcpHello(bool outgoing) : outgoing_(outgoing) {}

  // Ours, kept as sent (the proofs cover its nonce); the bytes to send.
  std::string send(wire::Hello ours);
  // The staged bytes the peer's hello needs before take(): its fixed part, then the rest.
  size_t need() const { return need_; }
  // Takes need() staged bytes at p. "" and *done once the peer's hello is whole; "" and not
  // done when it needs more (need() grew); else why the hello is refused.
  std::string take(const uint8_t* p, bool* done);
  const wire::Hello& peer() const { return peer_; }
  bool peerAuthenticates() const { return (peer_.flags & wire::kHelloAuth) != 0; }

  // Our proof over both hellos, and whether the peer's (kProofBytes at proof) verifies.
  auth::Proof prove(const auth::PeerAuth& auth) const;
  bool verify(const auth::PeerAuth& auth, const uint8_t* proof) const;

 private:
  auth::Party ourParty() const;
  auth::Party peerParty() const;

  bool outgoing_;
  wire::Hello ours_, peer_;
  size_t need_ = wire::kHelloBytes, nodeIdLen_ = 0, addressLen_ = 0;
};

}  // namespace rvma
