// Arena shares (protocol version 7): after the handshake, a side whose peer may reach its memory
// anyway (the peer read its probe word with process_vm_readv, whose permission also covers
// process_vm_writev) sends the memfd of its process's arena (core/arena.h) once, on the
// connection's socket, before the first record that needs it:
// - a far put from arena memory carries kFlagArena: the receiver copies its bytes out of its
//   mapping of the sender's memfd with one memcpy instead of pulling them with process_vm_readv;
// - a Grant (version 8) names a reserved range of a posted buffer in the receiver's arena: the
//   sender copies the put's bytes into its mapping of the receiver's memfd.
//
// The share is untrusted: the memfd must be a shmem file (not hugetlbfs, whose holes fault when
// no huge page is free) of exactly the announced size and sealed against shrinking, so that
// reading any byte of the mapping never faults whatever the peer does to it later; a record's
// range must lie inside it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rvma::shm {

constexpr uint16_t kArenaShareKind = 4;  // after the hellos' kinds 1..3
constexpr size_t kArenaShareBytes = 32;
constexpr uint64_t kMaxArenaBytes = 1ull << 40;

// magic u32 | version u16 | kind u16 | flags u32 (0) | reserved u32 (0) | base u64 | bytes u64
struct ArenaShare {
  uint64_t base = 0;   // where the arena is mapped in the sender: far put sources are addresses there
  uint64_t bytes = 0;  // the memfd's size
};

std::vector<uint8_t> encodeArenaShare(const ArenaShare& a);
// "" and *out when p is a well-formed share, else why not.
std::string decodeArenaShare(const uint8_t* p, size_t len, ArenaShare* out);
// The kind field of a socket message of at least 8 bytes (hello or share), else 0.
uint16_t messageKind(const uint8_t* p, size_t len);

// A peer's arena, mapped. RAII.
class PeerArena {
 public:
  PeerArena() = default;
  ~PeerArena();
  PeerArena(const PeerArena&) = delete;
  PeerArena& operator=(const PeerArena&) = delete;

  // Maps the memfd of `share` (closing fd either way): "" or why it is refused.
  std::string adopt(int fd, const ArenaShare& share);
  bool mapped() const { return base_ != nullptr; }
  // Our view of [src, src + len) of the peer's memory, or nullptr unless it lies in the arena.
  uint8_t* at(uint64_t src, uint64_t len) const;

 private:
  uint8_t* base_ = nullptr;
  ArenaShare share_;
};

}  // namespace rvma::shm
