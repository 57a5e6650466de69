#include "shm_arena_share.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "shm_channel.h"
#include "shm_layout.h"

namespace rvma::shm {

namespace {
constexpr uint64_t kPage = 4096;
}

std::vector<uint8_t> encodeArenaShare(const ArenaShare& a) {
  std::vector<uint8_t> out(kArenaShareBytes, 0);
  const uint32_t magic = kMagic;
  const uint16_t version = kVersion, kind = kArenaShareKind;
  std::memcpy(&out[0], &magic, 4);
  std::memcpy(&out[4], &version, 2);
  std::memcpy(&out[6], &kind, 2);
  std::memcpy(&out[16], &a.base, 8);
  std::memcpy(&out[24], &a.bytes, 8);
  return out;
}

uint16_t messageKind(const uint8_t* p, size_t len) {
  uint16_t kind = 0;
  if (len >= 8) std::memcpy(&kind, p + 6, 2);
  return kind;
}

std::string decodeArenaShare(const uint8_t* p, size_t len, ArenaShare* out) {
  if (len != kArenaShareBytes) return "shm arena share: " + std::to_string(len) + " bytes, not " + std::to_string(kArenaShareBytes);
  uint32_t magic, flags, reserved;
  uint16_t version, kind;
  ArenaShare a;
  std::memcpy(&magic, p, 4);
  std::memcpy(&version, p + 4, 2);
  std::memcpy(&kind, p + 6, 2);
  std::memcpy(&flags, p + 8, 4);
  std::memcpy(&reserved, p + 12, 4);
  std::memcpy(&a.base, p + 16, 8);
  std::memcpy(&a.bytes, p + 24, 8);
  if (magic != kMagic || version != kVersion || kind != kArenaShareKind) return "shm arena share: bad magic, version or kind";
  if (flags != 0 || reserved != 0) return "shm arena share: unknown flags";
  if (a.bytes == 0 || a.bytes > kMaxArenaBytes || a.bytes % kPage != 0 || a.base == 0 || a.base % kPage != 0 ||
      a.base > UINT64_MAX - a.bytes) {
    return "shm arena share: base " + std::to_string(a.base) + " and size " + std::to_string(a.bytes) + " are not allowed";
  }
  *out = a;
  return "";
}

PeerArena::~PeerArena() {
  if (base_) munmap(base_, share_.bytes);
}

std::string PeerArena::adopt(int fd, const ArenaShare& share) {
  std::string why = base_ ? "a second share" : checkSealedMemfd(fd, share.bytes);
  if (why.empty()) {
    // Writable for the peer's write grants (a memfd's fd is opened read-write).
    void* p = mmap(nullptr, share.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) {
      why = std::string("cannot map it: ") + std::strerror(errno);
    } else {
      base_ = static_cast<uint8_t*>(p);
      share_ = share;
    }
  }
  close(fd);
  return why.empty() ? why : "shm arena share: " + why;
}

uint8_t* PeerArena::at(uint64_t src, uint64_t len) const {
  if (!base_ || src < share_.base || len > share_.bytes || src - share_.base > share_.bytes - len) return nullptr;
  return base_ + (src - share_.base);
}

}  // namespace rvma::shm
