#include "ring_frame.h"

namespace rvma::ring {
namespace {
uint32_t u32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
void putU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = uint8_t(v >> (8 * i));
}
}  // namespace

std::string decodeFrameHeader(const uint8_t* bytes, uint64_t len, FrameHeader* out) {
  if (len < kFrameHeaderBytes) return std::to_string(len) + " bytes cannot hold a frame";
  if ((bytes[0] | bytes[1] << 8) != kFrameMagic) return "bad magic";
  if (bytes[2] != kFrameVersion) return "version " + std::to_string(bytes[2]) + ", expected " + std::to_string(kFrameVersion);
  if (bytes[3] != 0) return "unknown flags " + std::to_string(bytes[3]);
  const uint32_t headerLen = u32(bytes + 4);
  if (headerLen > len - kFrameHeaderBytes) {
    return "a " + std::to_string(headerLen) + "-byte header in a " + std::to_string(len) + "-byte frame";
  }
  const uint64_t seq = uint64_t(u32(bytes + 8)) | uint64_t(u32(bytes + 12)) << 32;
  if (seq > kMaxSeq) return "sequence number " + std::to_string(seq) + " out of range";
  *out = FrameHeader{seq, headerLen};
  return std::string();
}

void encodeFrameHeader(uint8_t* out, uint64_t seq, uint32_t headerLen) {
  out[0] = uint8_t(kFrameMagic & 0xff);
  out[1] = uint8_t(kFrameMagic >> 8);
  out[2] = kFrameVersion;
  out[3] = 0;
  putU32(out + 4, headerLen);
  putU32(out + 8, uint32_t(seq));
  putU32(out + 12, uint32_t(seq >> 32));
}

}  // namespace rvma::ring
