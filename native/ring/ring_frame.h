// A ring data frame as it lands in a posted buffer: a 16-byte ring header, the sender's header,
// then its data (docs/protocol.md, "Ring frames"). The header's sequence number restores send
// order whatever order the transport placed frames in (tcp may rotate puts over connections).
//   0 u16 magic 'RF'   2 u8 version   3 u8 flags (0)   4 u32 headerLen   8 u64 seq (< 2^53)
#pragma once
#include <cstdint>
#include <string>

namespace rvma::ring {

constexpr uint32_t kFrameHeaderBytes = 16;
constexpr uint16_t kFrameMagic = 0x5246;  // 'RF'
constexpr uint8_t kFrameVersion = 1;
// Beyond 2^53 a JavaScript number no longer counts frames exactly.
constexpr uint64_t kMaxSeq = (1ull << 53) - 1;

struct FrameHeader {
  uint64_t seq;
  uint32_t headerLen;  // bytes of the sender's header after the ring header
};

// The header of a frame of `len` bytes; "" when valid, else why not (peer input: any bytes).
std::string decodeFrameHeader(const uint8_t* bytes, uint64_t len, FrameHeader* out);
// Writes the 16-byte ring header of a frame.
void encodeFrameHeader(uint8_t* out, uint64_t seq, uint32_t headerLen);

}  // namespace rvma::ring
