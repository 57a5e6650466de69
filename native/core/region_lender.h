// Regions of this endpoint lent to peers for raw one-sided writes (shm: process_vm_writev,
// verbs: RDMA_WRITE): a peer writes the region's memory directly. A region is pinned in the
// region table while some holder (a connection) has it; closing it revokes it from every
// holder, and the pin goes only once each has confirmed (or its connection is gone), so a
// write a peer had started lands in memory that is still the region's. Its notice is then
// refused, the region being closed. What a provider keeps beside the pin (verbs: the region's
// registration with its device) is an Attachment, made at the first loan and gone before the pin.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "region_table.h"

namespace rvma {

class RegionLender {
 public:
  struct Attachment {
    virtual ~Attachment() = default;
  };
  // Makes a region's attachment when it is first lent; a refusal refuses the loan.
  using Attach = std::function<Status(const RegionReservation& pin, std::unique_ptr<Attachment>* out)>;
  struct Lent {
    RegionReservation pin;
    const Attachment* attachment = nullptr;  // null without an Attach, or for an empty region
  };

  // attach: unset when the pin is all a peer needs (shm).
  explicit RegionLender(RegionTable& regions, Attach attach = {}) : regions_(regions), attach_(std::move(attach)) {}
  ~RegionLender() { clear(); }

  // Ok: `holder` may write the region. A refusal otherwise (or the Attach's).
  // sender: the peer's node id, checked against the region's AccessPolicy.
  Status lend(uint64_t key, uint64_t holder, std::string_view sender, Lent* out);
  // The region closed: the holders that must confirm the revoke. None: released already.
  std::vector<uint64_t> revoke(uint64_t key);
  // A holder confirmed a revoke; false if it held no revoked loan of that key.
  bool returned(uint64_t key, uint64_t holder);
  // Its connection is gone, so it writes nothing more.
  void holderGone(uint64_t holder);
  void clear();

 private:
  struct Loan {
    std::unique_ptr<Attachment> attachment;
    RegionReservation pin;
    std::unordered_set<uint64_t> holders;
    bool revoking = false;
  };
  using Loans = std::unordered_map<uint64_t, Loan>;
  Loans::iterator drop(Loans::iterator it);

  RegionTable& regions_;
  Attach attach_;
  Loans loans_;
};

}  // namespace rvma
