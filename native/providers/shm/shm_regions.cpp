#include "shm_regions.h"

namespace rvma::shm {

Status RegionLoans::lend(uint64_t key, uint64_t holder, std::string_view sender, RegionReservation* out) {
  // Asked at every loan: the pin is shared by every peer that writes the region.
  if (Status s = regions_.permits(key, sender); !ok(s)) return s;
  auto it = loans_.find(key);
  if (it == loans_.end()) {
    Loan loan;
    Status s = regions_.pin(key, &loan.pin);
    if (!ok(s)) return s;
    it = loans_.emplace(key, std::move(loan)).first;
  } else if (it->second.revoking) {
    return Status::NoMailbox;  // closed; the table no longer knows the key either
  }
  it->second.holders.insert(holder);
  *out = it->second.pin;
  return Status::Ok;
}

std::vector<uint64_t> RegionLoans::revoke(uint64_t key) {
  auto it = loans_.find(key);
  if (it == loans_.end()) return {};
  it->second.revoking = true;
  std::vector<uint64_t> holders(it->second.holders.begin(), it->second.holders.end());
  if (holders.empty()) drop(it);
  return holders;
}

bool RegionLoans::returned(uint64_t key, uint64_t holder) {
  auto it = loans_.find(key);
  if (it == loans_.end() || !it->second.revoking || !it->second.holders.erase(holder)) return false;
  if (it->second.holders.empty()) drop(it);
  return true;
}

// Its connection is gone, so it writes nothing more: a loan nobody holds is dropped.
void RegionLoans::holderGone(uint64_t holder) {
  for (auto it = loans_.begin(); it != loans_.end();) {
    if (it->second.holders.erase(holder) && it->second.holders.empty()) {
      it = drop(it);
    } else {
      ++it;
    }
  }
}

void RegionLoans::clear() {
  for (auto it = loans_.begin(); it != loans_.end();) it = drop(it);
}

RegionLoans::Loans::iterator RegionLoans::drop(Loans::iterator it) {
  regions_.cancel(it->second.pin);
  return loans_.erase(it);
}

}  // namespace rvma::shm
