#include "shm_ring.h"

#include <cstring>

#include "../../core/status.h"

namespace rvma::shm {

bool RingReader::loadTail(std::string* why) {
  uint64_t tail = loadAcquire(&control_->tail);
  if (tail < head_ || tail - head_ > size_ || tail % 8 != 0) {
    *why = "shm ring: the producer's tail " + std::to_string(tail) + " is not within the ring (head " +
           std::to_string(head_) + ")";
    return false;
  }
  tail_ = tail;
  return true;
}

bool RingReader::pending() const { return loadAcquire(&control_->tail) != head_; }

// (A tail the peer set behind our head reads as records behind: only a hint, checked when read.)
bool RingReader::behind(const Record& r) const { return loadAcquire(&control_->tail) - head_ > r.bytes; }

bool RingReader::publish() {
  if (head_ == published_) return false;
  published_ = head_;
  storeRelease(&control_->head, head_);
  return true;
}

RingReader::Next RingReader::next(Record* out, std::string* why, bool refresh) {
  for (;;) {
    if (tail_ == head_ && refresh && !loadTail(why)) return Next::Corrupt;
    if (tail_ == head_) return Next::Empty;
    const uint64_t available = tail_ - head_;
    const uint64_t pos = head_ % size_;
    const uint64_t toEnd = size_ - pos;
    RecordPrefix prefix;
    std::memcpy(&prefix, data_ + pos, sizeof prefix);
    if (prefix.bytes < sizeof prefix || prefix.bytes % 8 != 0 || prefix.bytes > available || prefix.bytes > toEnd) {
      *why = "shm ring: a record of " + std::to_string(prefix.bytes) + " bytes does not fit what was published";
      return Next::Corrupt;
    }
    const uint8_t* at = data_ + pos;
    const auto type = RecordType(prefix.type);
    if (type == RecordType::Pad) {
      if (prefix.bytes != toEnd) {
        *why = "shm ring: a pad record that does not reach the ring's end";
        return Next::Corrupt;
      }
      head_ += prefix.bytes;
      continue;
    }
    *out = Record{};
    out->type = type;
    out->bytes = prefix.bytes;
    auto fixed = [&](void* dst, size_t n) {
      if (prefix.bytes < n) return false;
      std::memcpy(dst, at, n);
      return true;
    };
    auto checkPut = [&](const PutRecord& p) -> bool {
      if ((p.flags & ~kKnownFlags) != 0 || p.reserved != 0) {
        *why = "shm ring: a put with unknown flags";
        return false;
      }
      if ((p.flags & kFlagArena) && type != RecordType::FarPut && type != RecordType::FarGatherPut) {
        *why = "shm ring: the arena flag on a put that is not pulled";
        return false;
      }
      if ((p.flags & kFlagAppend) && ((p.flags & kFlagRaw) || p.offset != 0)) {
        *why = "shm ring: an append that also names an offset or a region";
        return false;
      }
      return true;
    };
    bool good = false;
    switch (type) {
      case RecordType::Put:
        if (!fixed(&out->put, sizeof(PutRecord)) || !checkPut(out->put)) break;
        if (out->put.len > maxInline_ || prefix.bytes != roundUp8(sizeof(PutRecord) + out->put.len)) {
          *why = "shm ring: an inline put whose length disagrees with its record";
          break;
        }
        out->payload = at + sizeof(PutRecord);
        out->payloadLen = out->put.len;
        good = true;
        break;
      case RecordType::FarPut: {
        FarPutRecord far;
        if (!fixed(&far, sizeof far) || !checkPut(far.put)) break;
        if (prefix.bytes != sizeof far || far.put.len == 0) {
          *why = "shm ring: a malformed far put";
          break;
        }
        out->put = far.put;
        out->src = far.src;
        good = true;
        break;
      }
      case RecordType::FarGatherPut: {
        FarGatherPutRecord far;
        if (!fixed(&far, sizeof far) || !checkPut(far.put)) break;
        if (far.headLen == 0 || far.headLen > kMaxFarHeadBytes || far.headLen >= far.put.len ||
            prefix.bytes != roundUp8(sizeof far + far.headLen)) {
          *why = "shm ring: a malformed far gather put";
          break;
        }
        out->put = far.put;
        out->src = far.src;
        out->payload = at + sizeof far;
        out->payloadLen = far.headLen;
        good = true;
        break;
      }
      case RecordType::ChunkPut: {
        ChunkPutRecord chunk;
        if (!fixed(&chunk, sizeof chunk) || !checkPut(chunk.put)) break;
        if (chunk.chunkLen == 0 || chunk.chunkLen > maxInline_ || chunk.chunkOffset > chunk.put.len ||
            chunk.chunkLen > chunk.put.len - chunk.chunkOffset ||
            prefix.bytes != roundUp8(sizeof chunk + chunk.chunkLen)) {
          *why = "shm ring: a chunk outside its put, or whose length disagrees with its record";
          break;
        }
        out->put = chunk.put;
        out->chunkOffset = chunk.chunkOffset;
        out->chunkLen = chunk.chunkLen;
        out->payload = at + sizeof chunk;
        out->payloadLen = chunk.chunkLen;
        good = true;
        break;
      }
      case RecordType::RawNotice:
        if (!fixed(&out->put, sizeof(PutRecord)) || !checkPut(out->put)) break;
        if (prefix.bytes != sizeof(PutRecord) || !(out->put.flags & kFlagRaw)) {
          *why = "shm ring: a malformed raw-write notice";
          break;
        }
        good = true;
        break;
      case RecordType::RegionQuery:
      case RecordType::Revoke:
      case RecordType::RevokeAck:
      case RecordType::Written:
        if (!fixed(&out->key, sizeof(KeyRecord)) || prefix.bytes != sizeof(KeyRecord) || out->key.status != 0 ||
            out->key.reserved != 0) {
          *why = "shm ring: a malformed region or written record";
          break;
        }
        good = true;
        break;
      case RecordType::RegionInfo:
        if (!fixed(&out->regionInfo, sizeof(RegionInfoRecord)) || prefix.bytes != sizeof(RegionInfoRecord) ||
            out->regionInfo.key.reserved != 0 || out->regionInfo.key.status > uint32_t(Status::Forbidden)) {
          *why = "shm ring: a malformed region answer";
          break;
        }
        good = true;
        break;
      case RecordType::Grant:
        if (!fixed(&out->grant, sizeof(GrantRecord)) || prefix.bytes != sizeof(GrantRecord) || out->grant.status != 0 ||
            out->grant.reserved != 0 || out->grant.len == 0) {
          *why = "shm ring: a malformed write grant";
          break;
        }
        good = true;
        break;
      case RecordType::Ack:
        if (!fixed(&out->ack, sizeof(AckRecord)) || prefix.bytes != sizeof(AckRecord) || out->ack.reserved != 0) {
          *why = "shm ring: a malformed ack";
          break;
        }
        good = true;
        break;
      default:
        *why = "shm ring: unknown record type " + std::to_string(prefix.type);
        break;
    }
    if (!good && why->empty()) *why = "shm ring: a record shorter than its type's header";
    return good ? Next::Record : Next::Corrupt;
  }
}

uint64_t RingWriter::unconsumed() const {
  uint64_t head = loadAcquire(&control_->head);
  return head <= tail_ && tail_ - head <= size_ ? tail_ - head : 0;
}

uint8_t* RingWriter::claim(uint64_t bytes, bool* corrupt) {
  uint64_t head = loadAcquire(&control_->head);
  if (head > tail_ || tail_ - head > size_ || head % 8 != 0) {
    *corrupt = true;
    return nullptr;
  }
  const uint64_t free = size_ - (tail_ - head);
  const uint64_t pos = tail_ % size_;
  const uint64_t toEnd = size_ - pos;
  const uint64_t pad = bytes > toEnd ? toEnd : 0;
  if (free < pad + bytes) return nullptr;
  if (pad) {
    RecordPrefix p{uint32_t(RecordType::Pad), uint32_t(pad)};
    std::memcpy(data_ + pos, &p, sizeof p);
    tail_ += pad;
    return data_;
  }
  return data_ + pos;
}

bool RingWriter::publish() {
  if (tail_ == published_) return false;
  published_ = tail_;
  storeRelease(&control_->tail, tail_);
  return true;
}

}  // namespace rvma::shm
