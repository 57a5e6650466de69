// The shared segment of one shm connection and the records its rings carry: the byte layout
// docs/protocol.md ("Shared memory") describes. Both processes map the segment writable, so
// everything in it is untrusted input to the side that reads it (see shm_ring.h).
#pragma once
#include <cstddef>
#include <cstdint>

namespace rvma::shm {

constexpr uint32_t kMagic = 0x48535652;  // "RVSH"
// 2: Ack and RegionInfo status 13 (Forbidden); 3: peer authentication in the hellos (auth flag,
// nonces, proofs, refusals; shm_hello.h); 4: FarGatherPut; 5: kFlagLazyAck; 6: kFlagLateAck;
// 7: arena shares (shm_arena_share.h) and kFlagArena; 8: write grants (Grant, Written)
constexpr uint16_t kVersion = 8;
constexpr uint64_t kMinRingBytes = 64ull << 10;
constexpr uint64_t kMaxRingBytes = 256ull << 20;

// One direction's indices and wake-up flags, each word on its own cache line so that the
// producer's and the consumer's writes do not share one. Indices count bytes since the start
// and only grow; a record starts at index % ringBytes.
struct RingControl {
  alignas(64) uint64_t tail;              // written by the producer: bytes published
  alignas(64) uint64_t head;              // written by the consumer: bytes consumed
  alignas(64) uint32_t consumerSleeping;  // the consumer wants an eventfd kick for new records
  alignas(64) uint32_t producerWaiting;   // the producer wants a kick once space frees up
};
static_assert(sizeof(RingControl) == 256, "RingControl layout");

// [control dialer->acceptor][control acceptor->dialer][ring dialer->acceptor][ring acceptor->dialer]
inline uint64_t segmentBytes(uint64_t ringBytes) { return 2 * sizeof(RingControl) + 2 * ringBytes; }
inline size_t controlOffset(int direction) { return size_t(direction) * sizeof(RingControl); }
inline uint64_t ringOffset(int direction, uint64_t ringBytes) {
  return 2 * sizeof(RingControl) + uint64_t(direction) * ringBytes;
}
constexpr int kFromDialer = 0, kFromAcceptor = 1;

// Records: 8-byte aligned, never split across the ring's end (a Pad fills the rest).
enum class RecordType : uint32_t {
  Pad = 1,       // skip to the ring's start; bytes = what is left to the end
  Put = 2,       // payload inline
  FarPut = 3,    // payload in the sender's memory at `src`: the receiver pulls it (CMA)
  ChunkPut = 4,  // one piece of a put copied through the ring (where CMA is refused)
  Ack = 5,       // the outcome of put `id`
  // One-sided raw writes (the writer copies into the peer's region with process_vm_writev):
  RegionQuery = 6,  // may I write region `key`?
  RegionInfo = 7,   // the answer: status, and the region's address and length in the owner's memory
  RawNotice = 8,    // a PutRecord (kFlagRaw): bytes written at `offset`; answered by an Ack like a put
  Revoke = 9,       // region `key` closed: write no more
  RevokeAck = 10,   // no more writes to region `key` from here
  FarGatherPut = 11,  // a gathered put: its first `headLen` bytes inline, the rest pulled from `src`
  // Write grants: instead of pulling a FarPut, the receiver may reserve its range and answer
  // with where it lies in the receiver's arena; the sender copies the bytes there itself
  // (one memcpy, where a pull goes through the kernel page by page) and says so.
  Grant = 12,    // put `id` goes to [dst, dst + len) in the arena the receiver shared
  Written = 13,  // a KeyRecord: the bytes of put `key` are in place (answered by an Ack)
};

constexpr uint32_t kFlagAppend = 1;
constexpr uint32_t kFlagRaw = 2;  // vaddr is a region key, offset the offset in it
// Nothing waits on the answer soon: the receiver may leave its Ack in the ring without waking
// the sender (ShmConnection::transmit).
constexpr uint32_t kFlagLazyAck = 4;
// Nothing waits on the answer at all: the receiver may leave it unannounced longer
// (kLateAckDelayMs).
constexpr uint32_t kFlagLateAck = 8;
// FarPut and FarGatherPut only: the source lies in the arena the sender shared on the socket
// (shm_arena_share.h); the receiver copies it from its mapping of that arena.
constexpr uint32_t kFlagArena = 16;
constexpr uint32_t kKnownFlags = kFlagAppend | kFlagRaw | kFlagLazyAck | kFlagLateAck | kFlagArena;

struct RecordPrefix {
  uint32_t type;
  uint32_t bytes;  // the whole record, prefix included, a multiple of 8
};

struct PutRecord {
  RecordPrefix prefix;
  uint32_t flags;
  uint32_t reserved;
  uint64_t id;      // the sender's put id on this connection: 1, 2, 3, ... in ring order
  uint64_t vaddr;   // mailbox vaddr, or region key (kFlagRaw)
  uint64_t offset;  // explicit placement (not with kFlagAppend)
  uint64_t len;     // the whole put's length
};

struct FarPutRecord {
  PutRecord put;
  uint64_t src;  // address of the payload in the sender's memory
};

struct FarGatherPutRecord {
  PutRecord put;
  uint64_t src;      // address of the bytes after the head in the sender's memory
  uint64_t headLen;  // 1 .. kMaxFarHeadBytes, less than put.len; the head follows the record
};
// The longest head a FarGatherPut carries inline (a ring frame's or a pushed tensor's header).
constexpr uint64_t kMaxFarHeadBytes = 4096;

struct ChunkPutRecord {
  PutRecord put;
  uint64_t chunkOffset;  // within the put; chunks come in order, the first at 0
  uint64_t chunkLen;     // payload inline
};

struct AckRecord {
  RecordPrefix prefix;
  uint32_t status;  // core/status.h
  uint32_t reserved;
  uint64_t id;
};

// RegionQuery, Revoke, RevokeAck.
struct KeyRecord {
  RecordPrefix prefix;
  uint32_t status;  // 0
  uint32_t reserved;
  uint64_t key;
};

struct RegionInfoRecord {
  KeyRecord key;  // status: Ok, or why the region is not lent
  uint64_t address, len;
};

struct GrantRecord {
  RecordPrefix prefix;
  uint32_t status;  // 0
  uint32_t reserved;
  uint64_t id;   // the put's wire id
  uint64_t dst;  // an address in the receiver's memory, inside the arena it shared
  uint64_t len;  // the put's length
};

static_assert(sizeof(KeyRecord) == 24 && sizeof(RegionInfoRecord) == 40 && sizeof(GrantRecord) == 40, "record layout");
static_assert(sizeof(PutRecord) == 48 && sizeof(FarPutRecord) == 56 && sizeof(FarGatherPutRecord) == 64 &&
                  sizeof(ChunkPutRecord) == 64 && sizeof(AckRecord) == 24,
              "record layout");

inline uint64_t roundUp8(uint64_t n) { return (n + 7) & ~uint64_t(7); }

}  // namespace rvma::shm
