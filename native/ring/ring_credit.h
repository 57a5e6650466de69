// A ring credit record: the receiver of one direction tells its sender how many frames it may
// have sent in all (cumulative, so a lost or reordered record costs nothing). 24 bytes:
//   0 u16 magic 'RC'   2 u8 version   3 u8 dir (0: frames sent to next, 1: to prev)
//   4 u32 frameBytes (the largest frame the receiver takes)   8 u64 total
//   16 u64 base: the receiver's ring mailboxes, which name its instance (an endpoint that joins
//   a generation again does so with mailboxes of its own)
#pragma once
#include <cstdint>
#include <string>

namespace rvma::ring {

constexpr uint32_t kCreditBytes = 24;
constexpr uint16_t kCreditMagic = 0x4352;  // 'RC'
constexpr uint8_t kCreditVersion = 1;
enum class Dir : uint8_t { Next = 0, Prev = 1 };

struct Credit {
  Dir dir;
  uint32_t frameBytes;
  uint64_t total;
  uint64_t base;
};

// "" when valid, else why not (peer input: any bytes).
std::string decodeCredit(const uint8_t* bytes, uint64_t len, Credit* out);
void encodeCredit(uint8_t out[kCreditBytes], const Credit& c);

}  // namespace rvma::ring
