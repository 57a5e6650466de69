#include "shm_hello.h"

#include <cstring>

#include "shm_layout.h"

namespace rvma::shm {

namespace {
// The bytes between the fixed part and the node id.
size_t authBytes(const Hello& h) {
  return (h.carriesNonce() ? auth::kNonceBytes : 0) + (h.carriesProof() ? auth::kProofBytes : 0);
}
}  // namespace

// magic u32 | version u16 | kind u16 | flags u32 | nodeIdLen u32 | incarnation u64 |
// ringBytes u64 | probeAddress u64 | probeValue u64 | [nonce 32] | [proof 32] | node id
std::vector<uint8_t> encodeHello(const Hello& h) {
  std::vector<uint8_t> out(kHelloFixedBytes + authBytes(h) + h.nodeId.size());
  uint8_t* p = out.data();
  auto put = [&p](const void* v, size_t n) {
    std::memcpy(p, v, n);
    p += n;
  };
  uint32_t magic = kMagic, idLen = uint32_t(h.nodeId.size());
  uint16_t version = kVersion, kind = uint16_t(h.kind);
  put(&magic, 4), put(&version, 2), put(&kind, 2), put(&h.flags, 4), put(&idLen, 4);
  put(&h.incarnation, 8), put(&h.ringBytes, 8), put(&h.probeAddress, 8), put(&h.probeValue, 8);
  if (h.carriesNonce()) put(h.nonce.data(), h.nonce.size());
  if (h.carriesProof()) put(h.proof.data(), h.proof.size());
  put(h.nodeId.data(), h.nodeId.size());
  return out;
}

std::string decodeHello(const uint8_t* p, size_t len, HelloKind expected, Hello* out) {
  if (len < kHelloFixedBytes) return "shm hello: " + std::to_string(len) + " bytes is too short";
  auto get = [&p](void* v, size_t n) {
    std::memcpy(v, p, n);
    p += n;
  };
  uint32_t magic, flags, idLen;
  uint16_t version, kind;
  Hello h;
  get(&magic, 4), get(&version, 2), get(&kind, 2), get(&flags, 4), get(&idLen, 4);
  get(&h.incarnation, 8), get(&h.ringBytes, 8), get(&h.probeAddress, 8), get(&h.probeValue, 8);
  if (magic != kMagic) return "shm hello: not an rvma shm peer (bad magic)";
  if (version != kVersion) {
    return "shm hello: protocol version " + std::to_string(version) + ", this side speaks " + std::to_string(kVersion);
  }
  if (kind != uint16_t(expected)) return "shm hello: message kind " + std::to_string(kind) + " out of turn";
  if ((flags & ~kHelloKnownFlags) != 0) return "shm hello: unknown flags";
  h.kind = expected;
  h.flags = flags;
  // A refusal answers an offer and claims nothing but whether its sender authenticates.
  if (h.refused() && (expected == HelloKind::Offer || (flags & kHelloFlagCanPull) != 0)) {
    return "shm hello: a refusal where none can be";
  }
  const size_t extra = authBytes(h);
  if (idLen == 0 || idLen > kMaxNodeIdBytes || len != kHelloFixedBytes + extra + idLen) {
    return "shm hello: node id length " + std::to_string(idLen) + " disagrees with the message";
  }
  if (h.incarnation == 0) return "shm hello: incarnation 0";
  const bool offer = expected == HelloKind::Offer;
  if (offer ? (h.ringBytes < kMinRingBytes || h.ringBytes > kMaxRingBytes || (h.ringBytes & (h.ringBytes - 1)) != 0)
            : h.ringBytes != 0) {
    return "shm hello: ring size " + std::to_string(h.ringBytes) + " is not allowed";
  }
  if (h.carriesNonce()) get(h.nonce.data(), h.nonce.size());
  if (h.carriesProof()) get(h.proof.data(), h.proof.size());
  h.nodeId.assign(reinterpret_cast<const char*>(p), idLen);
  *out = std::move(h);
  return "";
}

}  // namespace rvma::shm
