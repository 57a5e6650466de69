// One direction of a connection's shared segment, as a single-producer/single-consumer byte
// ring. Each side keeps its own index in local memory and only publishes it; what it reads of
// the other side's (the consumer's head, the producer's tail and records) is checked before
// use, and every record header is copied out once and used only from that copy.
#pragma once
#include <cstdint>
#include <string>

#include "shm_layout.h"

namespace rvma::shm {

// A record as read: fixed fields copied into local memory; payload still points into the ring.
struct Record {
  RecordType type{};
  uint32_t bytes = 0;
  PutRecord put{};        // Put, FarPut, FarGatherPut, ChunkPut, RawNotice
  uint64_t src = 0;       // FarPut, FarGatherPut (where the bytes after the head are)
  uint64_t chunkOffset = 0, chunkLen = 0;  // ChunkPut
  AckRecord ack{};        // Ack
  KeyRecord key{};        // RegionQuery, Revoke, RevokeAck, Written
  GrantRecord grant{};    // Grant
  RegionInfoRecord regionInfo{};  // RegionInfo
  const uint8_t* payload = nullptr;  // Put, ChunkPut, FarGatherPut (its head): bytes the peer may still change
  uint64_t payloadLen = 0;
};

class RingReader {
 public:
  enum class Next { Empty, Record, Corrupt };

  RingReader() = default;
  // maxInline: the largest payload a Put or ChunkPut may carry.
  RingReader(RingControl* control, const uint8_t* data, uint64_t size, uint64_t maxInline)
      : control_(control), data_(data), size_(size), maxInline_(maxInline) {}

  // The next record, not consumed yet. Corrupt: *why says what the peer broke. refresh: look
  // for records published since the last look (else only those seen then count).
  Next next(Record* out, std::string* why, bool refresh = true);
  void consume(const Record& r) { head_ += r.bytes; }
  // Publishes what was consumed; true if the head moved.
  bool publish();
  // Whether anything is published beyond what was consumed (reads the peer's tail).
  bool pending() const;
  // Whether anything is published behind r, the record not consumed yet (reads the peer's tail).
  bool behind(const Record& r) const;
  uint64_t head() const { return head_; }

 private:
  bool loadTail(std::string* why);

  RingControl* control_ = nullptr;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0, maxInline_ = 0;
  uint64_t head_ = 0, published_ = 0, tail_ = 0;
};

class RingWriter {
 public:
  RingWriter() = default;
  RingWriter(RingControl* control, uint8_t* data, uint64_t size) : control_(control), data_(data), size_(size) {}

  // Room for a record of `bytes` (a multiple of 8, at most size/2), behind a Pad if it would
  // cross the ring's end; nullptr when the ring is too full, or the peer's head is corrupt
  // (*corrupt set). The record counts once commit()ed.
  uint8_t* claim(uint64_t bytes, bool* corrupt);
  void commit(uint64_t bytes) { tail_ += bytes; }
  // Publishes what was committed; true if the tail moved.
  bool publish();
  // Bytes the consumer has not consumed yet, by its published head (0 if that is corrupt).
  uint64_t unconsumed() const;

 private:
  RingControl* control_ = nullptr;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t tail_ = 0, published_ = 0;
};

// Cross-process flag and index access: plain words in shared memory, atomically.
inline uint64_t loadAcquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
inline void storeRelease(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
inline uint32_t loadFlag(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
inline void storeFlag(uint32_t* p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
// Clears a wake-up flag and says whether it was set: the one who clears it kicks, once, so a
// peer that is runnable but not yet running is not kicked again for every record.
inline bool takeFlag(uint32_t* p) { return __atomic_exchange_n(p, 0u, __ATOMIC_SEQ_CST) != 0; }
// Orders an index store before a flag load (and a flag store before an index load): with it
// on both sides, either the waker sees the sleeper's flag or the sleeper sees the new index.
inline void fullFence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

}  // namespace rvma::shm
