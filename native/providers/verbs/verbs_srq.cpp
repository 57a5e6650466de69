#include "verbs_srq.h"

namespace rvma::verbs {

std::unique_ptr<SharedReceiveQueue> SharedReceiveQueue::create(ibv_pd* pd, uint32_t depth, std::string* error,
                                                               Status* status) {
  auto q = std::unique_ptr<SharedReceiveQueue>(new SharedReceiveQueue());
  const size_t bytes = size_t(depth) * kCtrlBytes;
  q->depth_ = depth;
  q->pool_ = allocPages(bytes);
  if (!q->pool_) {
    *error = "out of memory for the shared receive queue's buffers";
    return nullptr;
  }
  q->mr_.reset(ibv_reg_mr(pd, q->pool_.get(), bytes, IBV_ACCESS_LOCAL_WRITE));
  if (!q->mr_) {
    *error = "the shared receive queue's " + std::to_string(depth) + " buffers (verbs.receiveDepth): " +
             registrationError(bytes, errno);
    *status = Status::Registration;
    return nullptr;
  }
  ibv_srq_init_attr attr{};
  attr.attr.max_wr = depth;
  attr.attr.max_sge = 1;
  q->srq_.reset(ibv_create_srq(pd, &attr));
  if (!q->srq_) {
    *error = std::string("cannot create a shared receive queue: ") + std::strerror(errno);
    return nullptr;
  }
  for (uint32_t i = 0; i < depth; i++) {
    if (!q->post(i)) {
      *error = std::string("cannot post receives: ") + std::strerror(errno);
      return nullptr;
    }
  }
  return q;
}

bool SharedReceiveQueue::post(uint32_t buffer) {
  ibv_sge sge{uintptr_t(data(buffer)), kCtrlBytes, mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = buffer;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_srq_recv(srq_.get(), &wr, &bad) == 0;
}

// The queue has room for every buffer, so posting fails only when the device is in trouble:
// a buffer that fails is kept and tried again with the next one, never dropped.
void SharedReceiveQueue::repost(uint32_t buffer) {
  unposted_.push_back(buffer);
  while (!unposted_.empty() && post(unposted_.back())) unposted_.pop_back();
}

}  // namespace rvma::verbs
