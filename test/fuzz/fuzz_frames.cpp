// libFuzzer harness: the tcp wire decoders (native/wire). Whatever decodes must be exactly
// what an encoder writes (canonical: one byte string per value), keep every invariant the
// connection relies on, and a part extension that decodes must lie inside its put.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "native/providers/tcp/tcp_frames.h"

using namespace rvma::wire;

namespace {
void require(bool holds) {
  if (!holds) std::abort();
}

void helloFrom(const uint8_t* data, size_t size) {
  if (size < kHelloBytes) return;
  Hello h;
  size_t idLen = 0, addressLen = 0;
  if (decodeHelloFixed(data, &h, &idLen, &addressLen) != DecodeResult::Ok) return;
  require(h.magic == kMagic && h.version == kVersion);
  require(idLen >= 1 && idLen <= kMaxNodeIdBytes && addressLen <= kMaxAddressBytes);
  require((h.flags & ~kHelloAuth) == 0);
  const size_t whole = kHelloBytes + kNonceBytes + idLen + addressLen;
  if (size < whole) return;
  const uint8_t* rest = data + kHelloBytes;
  std::memcpy(h.nonce.data(), rest, kNonceBytes);
  h.nodeId.assign(reinterpret_cast<const char*>(rest + kNonceBytes), idLen);
  h.listenAddress.assign(reinterpret_cast<const char*>(rest + kNonceBytes + idLen), addressLen);
  std::string again = encodeHello(h);
  require(again.size() == whole && std::memcmp(again.data(), data, again.size()) == 0);
}

void frameFrom(const uint8_t* data, size_t size) {
  if (size < kHeaderBytes) return;
  FrameHeader f;
  if (decodeHeader(data, &f) != DecodeResult::Ok) return;
  uint8_t again[kHeaderBytes];
  encodeHeader(f, again);
  require(std::memcmp(again, data, kHeaderBytes) == 0);
  require(f.len <= kMaxFrameBytes);
  switch (f.type) {
    case FrameType::Put:
      require(f.parts == 0 || (f.parts >= 2 && f.parts <= kMaxParts));
      require((f.flags & ~(kAppend | kLazyAck | kLateAck)) == 0 && validAckFlags(f.flags));
      require(!(f.flags & kAppend) || (f.offset == 0 && f.parts == 0));
      break;
    case FrameType::Ack:
    case FrameType::Nack:
      require(f.len == 0 && f.vaddr == 0 && f.parts == 0 && (f.type == FrameType::Ack) == (f.status == 0));
      break;
    case FrameType::Acks:
      require(f.len == 0 && f.vaddr == 0 && f.parts == 0 && f.flags == 0 && f.status == 0);
      require(f.offset >= 2 && f.offset <= kMaxAcksRun);
      break;
    case FrameType::Floor:
    case FrameType::Window:
      require(f.len == 0 && f.vaddr == 0 && f.offset == 0 && f.flags == 0 && f.parts == 0 && f.status == 0);
      require(f.type == FrameType::Floor || f.id != 0);
      break;
    case FrameType::Error:
      require(f.len <= kMaxErrorTextBytes);
      break;
    case FrameType::Ping:
    case FrameType::Pong:
      require(f.len == 0);
      break;
    case FrameType::RawWrite:
      require((f.flags & ~(kLazyAck | kLateAck)) == 0 && validAckFlags(f.flags) && f.parts == 0);
      break;
    default:
      require(false);  // an unknown type decoded
  }
  if (f.type != FrameType::Put || f.parts == 0 || size < kHeaderBytes + kPartExtBytes) return;
  PartExt ext;
  if (decodePartExt(data + kHeaderBytes, f, &ext) != DecodeResult::Ok) return;
  // The receiver writes the part at (offset - putOffset) into a reservation of putLen bytes.
  require(f.offset >= ext.putOffset && f.len <= ext.putLen && f.offset - ext.putOffset + f.len <= ext.putLen);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  helloFrom(data, size);
  frameFrom(data, size);
  return 0;
}
