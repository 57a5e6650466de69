// The provider's shared receive queue: one pool of receive buffers for every queue pair, so
// receive memory does not grow with the number of peers. Peers' SENDs (control messages) land
// in a buffer; their RDMA_WRITE_WITH_IMMs (eager puts) use up a receive but none of its bytes.
// A receive's wr_id is its buffer's index, below 2^32: connections' work requests carry their
// id (1 and up) in the upper 32 bits.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../core/status.h"
#include "verbs_resources.h"
#include "verbs_wire.h"

namespace rvma::verbs {

class SharedReceiveQueue {
 public:
  // depth buffers of kCtrlBytes, registered and posted. nullptr when the device or the kernel
  // refuses, with *error saying why and *status Registration when it was the registration.
  static std::unique_ptr<SharedReceiveQueue> create(ibv_pd* pd, uint32_t depth, std::string* error, Status* status);

  static bool isReceive(uint64_t wrId) { return (wrId >> 32) == 0; }
  static uint32_t bufferOf(uint64_t wrId) { return uint32_t(wrId); }

  ibv_srq* srq() const { return srq_.get(); }
  uint32_t depth() const { return depth_; }
  const uint8_t* data(uint32_t buffer) const { return pool_.get() + size_t(buffer) * kCtrlBytes; }
  // Gives a completed receive's buffer back to the queue (with any an earlier call could not post).
  void repost(uint32_t buffer);

 private:
  bool post(uint32_t buffer);

  uint32_t depth_ = 0;
  // Destroyed bottom-up: the queue before the registration before the memory.
  PageBuffer pool_;
  MrPtr mr_;
  SrqPtr srq_;
  std::vector<uint32_t> unposted_;
};

}  // namespace rvma::verbs
