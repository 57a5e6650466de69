#include "verbs_regions.h"

namespace rvma::verbs {

RegionLender::Attach registerForRemoteWrites(ibv_pd* pd) {
  return [pd](const RegionReservation& pin, std::unique_ptr<RegionLender::Attachment>* out) {
    auto registration = std::make_unique<RegionRegistration>();
    registration->mr.reset(ibv_reg_mr(pd, pin.dst, pin.len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    if (!registration->mr) return Status::Registration;
    *out = std::move(registration);
    return Status::Ok;
  };
}

}  // namespace rvma::verbs
