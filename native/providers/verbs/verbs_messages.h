// Decoding of the verbs provider's control messages and eager-slot headers: everything a
// peer's software writes into our memory, checked here in one place with no rdma-core
// dependency, so the libFuzzer harness (test/fuzz) runs the very code a connection runs.
#pragma once
#include <cstdint>
#include <string>

#include "verbs_wire.h"

namespace rvma::verbs {

// Where a connection is in its handshake, which decides what the peer may send next.
enum class Phase {
  AwaitHello,  // only the peer's hello
  AwaitProof,  // both authenticate: only the peer's Auth, once
  Open,        // everything but a hello or an Auth
};

// One decoded control message: `type` says which member holds it.
struct CtrlMsg {
  MsgType type{};
  HelloMsg hello{};
  std::string nodeId;  // Hello: the bytes that follow the struct
  RtsMsg rts{};
  std::string rtsHead;  // Rts with kRtsHead: the put's first bytes
  AckMsg ack{};
  AcksMsg acks{};  // entries past acks.count are zero
  RegionInfoMsg regionInfo{};
  RawMsg raw{};
  KeyMsg key{};  // RegionQuery, Revoke, RevokeAck
  AuthMsg auth{};
};

// Decodes a control message of len bytes received in `phase`: a message of another phase (a
// second hello, an Auth when not awaited, anything before the peer's proof) breaks the
// protocol. Returns "" on success, else why.
std::string decodeCtrl(const uint8_t* p, uint32_t len, Phase phase, CtrlMsg* out);

// Checks an eager put that landed in slot `slot` of `ring` (`slots` slots of slotBytes):
// byteLen bytes written, its EagerHeader first. "" and *h on success.
std::string decodeEager(const uint8_t* ring, uint32_t slot, uint32_t byteLen, uint32_t slots, uint32_t slotBytes,
                        EagerHeader* h);

}  // namespace rvma::verbs
