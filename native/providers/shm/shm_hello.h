// The shm handshake: three messages on the connection's unix socket (SOCK_SEQPACKET, so one
// message is one datagram). Offer (dialer -> acceptor, with the segment's memfd and both
// eventfds attached), Accept (acceptor -> dialer), Confirm (dialer -> acceptor). Each carries
// the sender's node id and incarnation, and the address and value of a probe word in its
// memory: the peer reads it with process_vm_readv to learn whether it can pull far puts.
//
// With peer authentication (kHelloFlagAuth on both sides), the Offer and the Accept carry a
// fresh nonce each, the Accept the acceptor's proof over both and the Confirm the dialer's
// (auth/peer_auth.h). A side that refuses its peer for authentication says so with a refused
// Accept or Confirm (kHelloFlagRefused: no nonce, no proof) before it closes, so the other
// side's error is an authentication error too rather than a lost peer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "../../auth/peer_auth.h"

namespace rvma::shm {

enum class HelloKind : uint16_t { Offer = 1, Accept = 2, Confirm = 3 };

constexpr uint32_t kHelloFlagCanPull = 1;  // I read your probe: send me far puts
constexpr uint32_t kHelloFlagAuth = 2;     // I authenticate, and require it of you
constexpr uint32_t kHelloFlagRefused = 4;  // Accept or Confirm only: I refuse you (authentication); I close next
constexpr uint32_t kHelloKnownFlags = kHelloFlagCanPull | kHelloFlagAuth | kHelloFlagRefused;
constexpr size_t kHelloFixedBytes = 48;
constexpr size_t kMaxNodeIdBytes = 255;
constexpr size_t kMaxHelloBytes = kHelloFixedBytes + auth::kNonceBytes + auth::kProofBytes + kMaxNodeIdBytes;

struct Hello {
  HelloKind kind = HelloKind::Offer;
  uint32_t flags = 0;
  uint64_t incarnation = 0;
  uint64_t ringBytes = 0;  // Offer: the size of each direction's ring; else 0
  uint64_t probeAddress = 0, probeValue = 0;
  auth::Nonce nonce{};  // on the wire only where carriesNonce()
  auth::Proof proof{};  // on the wire only where carriesProof()
  std::string nodeId;

  bool authenticates() const { return (flags & kHelloFlagAuth) != 0; }
  bool refused() const { return (flags & kHelloFlagRefused) != 0; }
  // What an authenticating, not refusing hello adds: the sender's nonce (Offer, Accept) and
  // its proof (Accept, Confirm).
  bool carriesNonce() const { return authenticates() && !refused() && kind != HelloKind::Confirm; }
  bool carriesProof() const { return authenticates() && !refused() && kind != HelloKind::Offer; }
};

std::vector<uint8_t> encodeHello(const Hello& h);
// "" and *out when the message is a well-formed hello of the expected kind, else why not.
std::string decodeHello(const uint8_t* p, size_t len, HelloKind expected, Hello* out);

}  // namespace rvma::shm
