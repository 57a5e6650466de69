// A put's placement and handling as one word, the same whether JS hands the put over alone
// (put) or in the turn's queue (putQueued): src/mailbox/put-descriptor.ts.
#pragma once
#include <cstdint>

#include "../providers/provider.h"

namespace rvma::addon {

constexpr uint32_t kPutAppend = 1;   // placed at the buffer's append position, not at an offset
constexpr uint32_t kPutRaw = 2;      // a one-sided write: vaddr is the region key
constexpr uint32_t kPutLazyAck = 4;  // AckPace::Lazy
constexpr uint32_t kPutLateAck = 8;  // AckPace::Late
constexpr uint32_t kPutCopy = 16;    // the caller's memory is free once put() returns (copyIfKept)

// A put to `peer` of len bytes at data, placed and handled as flags say.
inline PutRequest putRequest(uint64_t id, PeerName peer, uint64_t incarnation, uint64_t vaddr, const uint8_t* data,
                             uint64_t len, uint64_t offset, uint32_t flags) {
  PutRequest req{id, std::move(peer), vaddr, data, len, Placement{(flags & kPutAppend) != 0, offset}};
  req.raw = (flags & kPutRaw) != 0;
  req.ack = (flags & kPutLateAck) ? AckPace::Late : (flags & kPutLazyAck) ? AckPace::Lazy : AckPace::Eager;
  req.incarnation = incarnation;
  return req;
}

}  // namespace rvma::addon
