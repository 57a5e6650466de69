// Regions of this endpoint lent to peers for raw RDMA writes. A region is registered with the
// device when a connection first asks for it, and stays registered (and pinned in the region
// table) while some connection holds it. Closing a region revokes it from every holder; the
// registration is dropped and the region released only once each holder has confirmed (or its
// connection is gone), so a write already on the wire lands in memory that is still the
// region's, and its notification is refused because the region is closed.
#pragma once
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../../core/region_table.h"
#include "verbs_resources.h"

namespace rvma::verbs {

class RegionLender {
 public:
  struct Lent {
    uint64_t addr, len;
    uint32_t rkey;
  };

  RegionLender(RegionTable& regions, ibv_pd* pd) : regions_(regions), pd_(pd) {}
  ~RegionLender() { clear(); }

  // Ok: connection `conn` may write the region. A refusal otherwise (Registration when the
  // device refused to register it).
  // sender: the peer's node id, checked against the region's AccessPolicy.
  Status lend(uint64_t key, uint32_t conn, std::string_view sender, Lent* out);
  // The region closed: the holders that must confirm the revoke. None: released already.
  std::vector<uint32_t> revoke(uint64_t key);
  // A holder confirmed a revoke; false if it held no revoked loan of that key.
  bool returned(uint64_t key, uint32_t conn);
  void connectionGone(uint32_t conn);
  void clear();

 private:
  struct Loan {
    MrPtr mr;
    RegionReservation pin;
    std::unordered_set<uint32_t> holders;
    bool revoking = false;
  };
  using Loans = std::unordered_map<uint64_t, Loan>;
  Loans::iterator drop(Loans::iterator it);

  RegionTable& regions_;
  ibv_pd* pd_;
  Loans loans_;
};

}  // namespace rvma::verbs
