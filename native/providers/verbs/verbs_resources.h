// RAII owners for rdma-core objects.
#pragma once
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

namespace rvma::verbs {

struct EventChannelFree {
  void operator()(rdma_event_channel* c) const { rdma_destroy_event_channel(c); }
};
struct CmIdFree {  // the QP goes first: an id cannot be destroyed under its QP
  void operator()(rdma_cm_id* id) const {
    if (id->qp) rdma_destroy_qp(id);
    rdma_destroy_id(id);
  }
};
struct PdFree {
  void operator()(ibv_pd* pd) const { ibv_dealloc_pd(pd); }
};
struct CompChannelFree {
  void operator()(ibv_comp_channel* c) const { ibv_destroy_comp_channel(c); }
};
struct CqFree {
  void operator()(ibv_cq* cq) const { ibv_destroy_cq(cq); }
};
struct SrqFree {
  void operator()(ibv_srq* srq) const { ibv_destroy_srq(srq); }
};
struct MrFree {
  void operator()(ibv_mr* mr) const { ibv_dereg_mr(mr); }
};
struct DeviceListFree {
  void operator()(ibv_context** list) const { rdma_free_devices(list); }
};
struct AlignedFree {
  void operator()(uint8_t* p) const { std::free(p); }
};

using EventChannelPtr = std::unique_ptr<rdma_event_channel, EventChannelFree>;
using CmIdPtr = std::unique_ptr<rdma_cm_id, CmIdFree>;
using PdPtr = std::unique_ptr<ibv_pd, PdFree>;
using CompChannelPtr = std::unique_ptr<ibv_comp_channel, CompChannelFree>;
using CqPtr = std::unique_ptr<ibv_cq, CqFree>;
using SrqPtr = std::unique_ptr<ibv_srq, SrqFree>;
using MrPtr = std::unique_ptr<ibv_mr, MrFree>;
using DeviceListPtr = std::unique_ptr<ibv_context*, DeviceListFree>;
using PageBuffer = std::unique_ptr<uint8_t, AlignedFree>;

inline PageBuffer allocPages(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, (bytes + 4095) & ~size_t(4095)) != 0) return nullptr;
  return PageBuffer(static_cast<uint8_t*>(p));
}

// Why ibv_reg_mr refused `len` bytes (errno `err`), with what to change (Status::Registration).
inline std::string registrationError(uint64_t len, int err) {
  return "cannot register " + std::to_string(len) + " bytes for RDMA (" + std::strerror(err) + ")" +
         (err == ENOMEM || err == EPERM || err == EAGAIN
              ? ": raise the locked-memory limit (ulimit -l, or memlock in /etc/security/limits.conf)"
              : "");
}

}  // namespace rvma::verbs
