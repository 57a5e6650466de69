// libFuzzer harness: the verbs provider's decoders of control messages and eager-slot
// headers (native/providers/verbs/verbs_messages.cpp), the code every received message
// passes before it acts. The first input byte picks the handshake phase (bit 0: the hello
// was received; bit 1 with it: the peer's proof is still awaited) and the landing slot (bits
// 2-4); the rest is the message as it arrived.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "native/providers/verbs/verbs_messages.h"

using namespace rvma::verbs;

namespace {
void require(bool holds) {
  if (!holds) std::abort();
}

Phase phaseOf(uint8_t mode) {
  if (!(mode & 1)) return Phase::AwaitHello;
  return mode & 2 ? Phase::AwaitProof : Phase::Open;
}

void control(const uint8_t* p, uint32_t len, Phase phase) {
  CtrlMsg m;
  if (!decodeCtrl(p, len, phase, &m).empty()) return;
  CtrlHeader h;
  std::memcpy(&h, p, sizeof h);
  require(h.magic == kMagic && uint16_t(m.type) == h.type);
  // Each phase takes exactly one kind: the hello, then the proof alone, then the rest.
  require((phase == Phase::AwaitHello) == (m.type == MsgType::Hello));
  require((phase == Phase::AwaitProof) == (m.type == MsgType::Auth));
  switch (m.type) {
    case MsgType::Hello:
      require(m.hello.version == kVersion && !m.nodeId.empty() && m.nodeId.size() <= kMaxNodeIdBytes &&
              sizeof m.hello + m.nodeId.size() == len);
      require(m.hello.slots >= 1 && m.hello.slots <= 4096 && m.hello.slotBytes >= 64);
      require((m.hello.flags & ~kHelloAuth) == 0);
      break;
    case MsgType::Auth:
      require(len == sizeof(AuthMsg));
      break;
    case MsgType::Rts:
      require((m.rts.flags & ~(kAppend | kRtsHead)) == 0 && len == sizeof(RtsMsg) + m.rtsHead.size());
      // A head only when flagged, and then some of the put's bytes, never all of them.
      require((m.rts.flags & kRtsHead) ? !m.rtsHead.empty() && m.rtsHead.size() <= kMaxRtsHead && m.rtsHead.size() < m.rts.len
                                       : m.rtsHead.empty());
      require(std::memcmp(m.rtsHead.data(), p + sizeof(RtsMsg), m.rtsHead.size()) == 0);
      break;
    case MsgType::Ack:
      require(len == sizeof(AckMsg));
      break;
    case MsgType::Acks:
      require(m.acks.count >= 2 && m.acks.count <= kMaxAcks && len == 16 + m.acks.count * sizeof(AckEntry));
      for (uint32_t i = m.acks.count; i < kMaxAcks; i++) require(m.acks.entries[i].putId == 0);  // nothing past the message
      break;
    case MsgType::RegionInfo:
      require(len == sizeof(RegionInfoMsg));
      break;
    case MsgType::Raw:
      require(len == sizeof(RawMsg));
      break;
    case MsgType::Ping:
    case MsgType::Pong:
      require(len == sizeof(CtrlHeader));
      break;
    case MsgType::RegionQuery:
    case MsgType::Revoke:
    case MsgType::RevokeAck:
      require(len == sizeof(KeyMsg));
      break;
    default:
      require(false);  // an unknown type decoded
  }
}

void eager(const uint8_t* p, uint32_t len, uint32_t slot) {
  constexpr uint32_t kSlots = 4, kSlotBytes = 128;
  // The ring as the peer's RDMA write left it: this input's bytes in the slot it named.
  std::vector<uint8_t> ring(kSlots * kSlotBytes);
  if (slot < kSlots && len) std::memcpy(ring.data() + slot * kSlotBytes, p, std::min(len, kSlotBytes));
  EagerHeader h;
  if (!decodeEager(ring.data(), slot, len, kSlots, kSlotBytes, &h).empty()) return;
  require(slot < kSlots && len <= kSlotBytes && h.len + sizeof h == len && (h.flags & ~kAppend) == 0);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  // A receive buffer holds at most kCtrlBytes; the provider copies out no more.
  const uint32_t len = uint32_t(std::min<size_t>(size - 1, kCtrlBytes));
  std::vector<uint8_t> msg(data + 1, data + 1 + len);  // exact size: ASan sees any over-read
  control(msg.data(), len, phaseOf(mode));
  eager(msg.data(), len, (mode >> 2) & 7);
  return 0;
}
