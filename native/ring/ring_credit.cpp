#include "ring_credit.h"

#include <cstring>

#include "ring_frame.h"

namespace rvma::ring {
namespace {
uint64_t u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
void putU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = uint8_t(v >> (8 * i));
}
}  // namespace

std::string decodeCredit(const uint8_t* b, uint64_t len, Credit* out) {
  if (len != kCreditBytes) return "a credit record of " + std::to_string(len) + " bytes";
  if ((b[0] | b[1] << 8) != kCreditMagic) return "bad magic";
  if (b[2] != kCreditVersion) return "version " + std::to_string(b[2]) + ", expected " + std::to_string(kCreditVersion);
  if (b[3] > uint8_t(Dir::Prev)) return "unknown direction " + std::to_string(b[3]);
  const uint64_t total = u64(b + 8);
  if (total > kMaxSeq + 1) return "a credit for " + std::to_string(total) + " frames";
  *out = Credit{Dir(b[3]), uint32_t(u64(b + 4) & 0xffffffffu), total, u64(b + 16)};
  return std::string();
}

void encodeCredit(uint8_t out[kCreditBytes], const Credit& c) {
  std::memset(out, 0, kCreditBytes);
  out[0] = uint8_t(kCreditMagic & 0xff);
  out[1] = uint8_t(kCreditMagic >> 8);
  out[2] = kCreditVersion;
  out[3] = uint8_t(c.dir);
  for (int i = 0; i < 4; i++) out[4 + i] = uint8_t(c.frameBytes >> (8 * i));
  putU64(out + 8, c.total);
  putU64(out + 16, c.base);
}

}  // namespace rvma::ring
