#include "verbs_messages.h"

#include <cstddef>
#include <cstring>

namespace rvma::verbs {
namespace {

// A fixed-size message copied out of its buffer; false when its length is not that size.
template <typename Msg>
bool copyExact(const uint8_t* p, uint32_t len, Msg* m) {
  if (len != sizeof(Msg)) return false;
  std::memcpy(m, p, sizeof(Msg));
  return true;
}

// An RTS, with its head when it says it carries one: at least one byte, fewer than the put's.
bool decodeRts(const uint8_t* p, uint32_t len, CtrlMsg* out) {
  RtsMsg& m = out->rts;
  if (len < sizeof m) return false;
  std::memcpy(&m, p, sizeof m);
  if ((m.flags & ~(kAppend | kRtsHead)) != 0) return false;
  const uint32_t head = len - uint32_t(sizeof m);
  if (!(m.flags & kRtsHead)) return head == 0;
  if (head == 0 || head > kMaxRtsHead || head >= m.len) return false;
  out->rtsHead.assign(reinterpret_cast<const char*>(p + sizeof m), head);
  return true;
}

std::string decodeHello(const uint8_t* p, uint32_t len, CtrlMsg* out) {
  HelloMsg& m = out->hello;
  if (len < sizeof m) return "unexpected or short hello";
  std::memcpy(&m, p, sizeof m);
  if (m.version != kVersion) {
    return "handshake refused: peer speaks version " + std::to_string(m.version) + ", this node speaks " +
           std::to_string(kVersion);
  }
  if (m.nodeIdLen == 0 || m.nodeIdLen > kMaxNodeIdBytes || sizeof m + m.nodeIdLen != len || m.slots == 0 ||
      m.slots > 4096 || m.slotBytes < 64 || m.slotBytes > (1u << 24) || (m.flags & ~kHelloAuth) != 0) {
    return "handshake refused: malformed hello";
  }
  out->nodeId.assign(reinterpret_cast<const char*>(p + sizeof m), m.nodeIdLen);
  return {};
}

// 2 to kMaxAcks answers, and exactly their bytes.
bool decodeAcks(const uint8_t* p, uint32_t len, AcksMsg* m) {
  constexpr uint32_t kFixed = offsetof(AcksMsg, entries);
  if (len < kFixed || len > sizeof *m) return false;
  std::memcpy(m, p, len);
  return m->count >= 2 && m->count <= kMaxAcks && len == kFixed + m->count * sizeof(AckEntry);
}

// A well-formed message that the phase does not allow yet (or any more).
std::string outOfPhase(MsgType type, Phase phase) {
  if (phase == Phase::AwaitHello) return type == MsgType::Auth ? "proof before the hello" : "message before the hello";
  if (phase == Phase::AwaitProof) return "message before the peer authenticated";
  return type == MsgType::Auth ? "unexpected proof (a second one, or the connection does not authenticate)" : "";
}

}  // namespace

std::string decodeCtrl(const uint8_t* p, uint32_t len, Phase phase, CtrlMsg* out) {
  CtrlHeader h;
  if (len < sizeof h) return "short control message";
  std::memcpy(&h, p, sizeof h);
  if (h.magic != kMagic) return "control message with a bad magic (not an rvma peer?)";
  out->type = MsgType(h.type);
  if (out->type == MsgType::Hello) return phase == Phase::AwaitHello ? decodeHello(p, len, out) : "unexpected or short hello";
  bool fits = false;
  const char* what = nullptr;
  switch (out->type) {
    case MsgType::Hello:
      break;
    case MsgType::Auth:
      fits = copyExact(p, len, &out->auth), what = "malformed proof";
      break;
    case MsgType::Rts:
      fits = decodeRts(p, len, out), what = "malformed RTS";
      break;
    case MsgType::Ack:
      fits = copyExact(p, len, &out->ack), what = "malformed answer";
      break;
    case MsgType::Acks:
      fits = decodeAcks(p, len, &out->acks), what = "malformed answers";
      break;
    case MsgType::RegionInfo:
      fits = copyExact(p, len, &out->regionInfo), what = "malformed region answer";
      break;
    case MsgType::Raw:
      fits = copyExact(p, len, &out->raw), what = "malformed raw write notice";
      break;
    case MsgType::Ping:
    case MsgType::Pong:
      fits = len == sizeof h, what = "malformed keepalive";
      break;
    case MsgType::RegionQuery:
    case MsgType::Revoke:
    case MsgType::RevokeAck:
      fits = copyExact(p, len, &out->key), what = "malformed region message";
      break;
  }
  if (!what) return "unknown control message type " + std::to_string(h.type);
  if (!fits) return what;
  const bool awaited = phase == (out->type == MsgType::Auth ? Phase::AwaitProof : Phase::Open);
  return awaited ? std::string() : outOfPhase(out->type, phase);
}

std::string decodeEager(const uint8_t* ring, uint32_t slot, uint32_t byteLen, uint32_t slots, uint32_t slotBytes,
                        EagerHeader* h) {
  if (slot >= slots || byteLen < sizeof(EagerHeader) || byteLen > slotBytes) {
    return "eager put outside the landing ring (slot " + std::to_string(slot) + ", " + std::to_string(byteLen) +
           " bytes)";
  }
  std::memcpy(h, ring + size_t(slot) * slotBytes, sizeof *h);
  if (h->len != byteLen - sizeof(EagerHeader)) return "eager put length does not match its header";
  if (h->flags & ~kAppend) return "eager put with unknown flags";
  return {};
}

}  // namespace rvma::verbs
