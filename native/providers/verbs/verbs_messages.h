// Decoding of the verbs provider's control messages and eager-slot headers: everything a
// peer's software writes into our memory, checked here in one place with no rdma-core
// dependency, so the libFuzzer harness (test/fuzz) runs the very code a connection runs.
#pragma once
#include <cstdint>
#include <string>

#include "verbs_wire.h"

namespace rvma::verbs {

// One decoded control message: `type` says which member holds it.
struct CtrlMsg {
  MsgType type{};
  HelloMsg hello{};
  std::string nodeId;  // Hello: the bytes that follow the struct
  RtsMsg rts{};
  AckMsg ack{};
  RegionInfoMsg regionInfo{};
  RawMsg raw{};
  KeyMsg key{};  // RegionQuery, Revoke, RevokeAck
};

// Decodes a control message of len bytes. Before the peer's hello only a hello is accepted,
// and after it none. Returns "" on success, else why the message breaks the protocol.
std::string decodeCtrl(const uint8_t* p, uint32_t len, bool helloReceived, CtrlMsg* out);

// Checks an eager put that landed in slot `slot` of `ring` (`slots` slots of slotBytes):
// byteLen bytes written, its EagerHeader first. "" and *h on success.
std::string decodeEager(const uint8_t* ring, uint32_t slot, uint32_t byteLen, uint32_t slots, uint32_t slotBytes,
                        EagerHeader* h);

}  // namespace rvma::verbs
