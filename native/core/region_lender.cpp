// The loans of regions for raw writes: what is lent, to whom, and when a closed region may go.
#include "region_lender.h"

namespace rvma {

Status RegionLender::lend(uint64_t key, uint64_t holder, std::string_view sender, Lent* out) {
  // Asked at every loan: the pin and its attachment are shared by every peer that writes the region.
  if (Status s = regions_.permits(key, sender); !ok(s)) return s;
  auto it = loans_.find(key);
  if (it == loans_.end()) {
    Loan loan;
    Status s = regions_.pin(key, &loan.pin);
    if (!ok(s)) return s;
    if (attach_ && loan.pin.len) {
      s = attach_(loan.pin, &loan.attachment);
      if (!ok(s)) {
        regions_.cancel(loan.pin);
        return s;
      }
    }
    it = loans_.emplace(key, std::move(loan)).first;
  } else if (it->second.revoking) {
    return Status::NoMailbox;  // closed; the table no longer knows the key either
  }
  it->second.holders.insert(holder);
  *out = Lent{it->second.pin, it->second.attachment.get()};
  return Status::Ok;
}

std::vector<uint64_t> RegionLender::revoke(uint64_t key) {
  auto it = loans_.find(key);
  if (it == loans_.end()) return {};
  it->second.revoking = true;
  std::vector<uint64_t> holders(it->second.holders.begin(), it->second.holders.end());
  if (holders.empty()) drop(it);
  return holders;
}

bool RegionLender::returned(uint64_t key, uint64_t holder) {
  auto it = loans_.find(key);
  if (it == loans_.end() || !it->second.revoking || !it->second.holders.erase(holder)) return false;
  if (it->second.holders.empty()) drop(it);
  return true;
}

// A loan nobody holds any more is dropped.
void RegionLender::holderGone(uint64_t holder) {
  for (auto it = loans_.begin(); it != loans_.end();) {
    if (it->second.holders.erase(holder) && it->second.holders.empty()) {
      it = drop(it);
    } else {
      ++it;
    }
  }
}

void RegionLender::clear() {
  for (auto it = loans_.begin(); it != loans_.end();) it = drop(it);
}

// The attachment (a device's registration) goes before the table may release the memory.
RegionLender::Loans::iterator RegionLender::drop(Loans::iterator it) {
  it->second.attachment.reset();
  regions_.cancel(it->second.pin);
  return loans_.erase(it);
}

}  // namespace rvma
