// Regions of this endpoint lent to shm peers for one-sided writes (process_vm_writev). A region
// is pinned in the region table while some connection holds it; closing it revokes it from
// every holder, and the pin goes only once each has confirmed (or its connection is gone), so
// a write a peer had started lands in memory that is still the region's. Its notice is then
// refused, the region being closed.
#pragma once
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../../core/region_table.h"

namespace rvma::shm {

class RegionLoans {
 public:
  explicit RegionLoans(RegionTable& regions) : regions_(regions) {}
  ~RegionLoans() { clear(); }

  // Ok and the region's memory: `holder` may write it.
  // sender: the peer's node id, checked against the region's AccessPolicy.
  Status lend(uint64_t key, uint64_t holder, std::string_view sender, RegionReservation* out);
  // The region closed: the holders that must confirm. None: released already.
  std::vector<uint64_t> revoke(uint64_t key);
  // A holder confirmed a revoke; false if it held no revoked loan of that key.
  bool returned(uint64_t key, uint64_t holder);
  void holderGone(uint64_t holder);
  void clear();

 private:
  struct Loan {
    RegionReservation pin;
    std::unordered_set<uint64_t> holders;
    bool revoking = false;
  };
  using Loans = std::unordered_map<uint64_t, Loan>;
  Loans::iterator drop(Loans::iterator it);

  RegionTable& regions_;
  Loans loans_;
};

}  // namespace rvma::shm
