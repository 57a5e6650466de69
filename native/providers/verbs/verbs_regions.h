// What the verbs provider keeps with a region it lends for raw RDMA writes (core/region_lender.h):
// the region's registration with the device, made at the first loan, whose rkey the peer
// writes with. The lender drops it before the region may be released.
#pragma once
#include <cstdint>

#include "../../core/region_lender.h"
#include "verbs_resources.h"

namespace rvma::verbs {

struct RegionRegistration final : RegionLender::Attachment {
  MrPtr mr;
};

// The lender's Attach: registers a pinned region for remote writes (Registration when the
// device refuses).
RegionLender::Attach registerForRemoteWrites(ibv_pd* pd);

// The rkey a peer writes a lent region with; 0 for an empty region, which is not registered.
inline uint32_t rkeyOf(const RegionLender::Lent& lent) {
  return lent.attachment ? static_cast<const RegionRegistration*>(lent.attachment)->mr->rkey : 0;
}

}  // namespace rvma::verbs
