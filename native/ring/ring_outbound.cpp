#include "ring_outbound.h"

namespace rvma::ring {

RingOutbound::RingOutbound(std::shared_ptr<RingCredits> credits, Dir dir) : credits_(std::move(credits)), dir_(dir) {}

RingOutbound::Take RingOutbound::take(uint64_t bytes, uint32_t headerLen, uint8_t head[kFrameHeaderBytes]) {
  // The last grant read is used up first: the credits' lock is taken only when it is.
  if (sent_ >= granted_) {
    const RingCredits::Grant g = credits_->granted(dir_);
    if (g.total > granted_) {
      granted_ = g.total;
      frameBytes_ = g.frameBytes;
    }
  }
  // Checked before the credit: once the neighbour's frame size is known, a frame too large
  // for it fails at once rather than after waiting for a buffer.
  if (granted_ > 0 && bytes > frameBytes_) return Take::TooLarge;
  if (sent_ >= granted_) return Take::NoCredit;
  encodeFrameHeader(head, sent_++, headerLen);
  return Take::Ok;
}

}  // namespace rvma::ring
