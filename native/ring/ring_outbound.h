// One direction's sending side of a ring, in native code: it numbers the frames and lets each
// go only within the credits the neighbour granted, read from RingCredits as they arrive. JS
// hands a frame over in one call (EndpointWrap::RingSend) and waits only when take() finds no
// credit; the sequence numbers and the window live here, never in JS.
#pragma once
#include <cstdint>
#include <memory>

#include "ring_credits.h"
#include "ring_frame.h"

namespace rvma::ring {

class RingOutbound {
 public:
  enum class Take { Ok, NoCredit, TooLarge };

  RingOutbound(std::shared_ptr<RingCredits> credits, Dir dir);

  // JS thread: the next sequence number for a frame of `bytes` (the sender's header and data,
  // `headerLen` of them the header), its ring header written to `head`. NoCredit: the
  // neighbour has no free buffer (nothing taken; try again on its next credit). TooLarge: the
  // frame exceeds the neighbour's frameBytes (nothing taken).
  Take take(uint64_t bytes, uint32_t headerLen, uint8_t head[kFrameHeaderBytes]);
  // Frames numbered so far.
  uint64_t sent() const { return sent_; }

 private:
  const std::shared_ptr<RingCredits> credits_;
  const Dir dir_;
  uint64_t sent_ = 0, granted_ = 0;
  uint32_t frameBytes_ = 0;
};

}  // namespace rvma::ring
