#include "verbs_regions.h"

namespace rvma::verbs {

Status RegionLender::lend(uint64_t key, uint32_t conn, std::string_view sender, Lent* out) {
  // Asked at every loan: the pin and its registration are shared by every peer that writes the region.
  if (Status s = regions_.permits(key, sender); !ok(s)) return s;
  auto it = loans_.find(key);
  if (it == loans_.end()) {
    Loan loan;
    Status s = regions_.pin(key, &loan.pin);
    if (!ok(s)) return s;
    if (loan.pin.len) {
      loan.mr.reset(ibv_reg_mr(pd_, loan.pin.dst, loan.pin.len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
      if (!loan.mr) {
        regions_.cancel(loan.pin);
        return Status::Registration;
      }
    }
    it = loans_.emplace(key, std::move(loan)).first;
  } else if (it->second.revoking) {
    return Status::NoMailbox;  // closed; the table no longer knows the key either
  }
  it->second.holders.insert(conn);
  const Loan& loan = it->second;
  *out = Lent{uint64_t(uintptr_t(loan.pin.dst)), loan.pin.len, loan.mr ? loan.mr->rkey : 0};
  return Status::Ok;
}

std::vector<uint32_t> RegionLender::revoke(uint64_t key) {
  auto it = loans_.find(key);
  if (it == loans_.end()) return {};
  it->second.revoking = true;
  std::vector<uint32_t> holders(it->second.holders.begin(), it->second.holders.end());
  if (holders.empty()) drop(it);
  return holders;
}

bool RegionLender::returned(uint64_t key, uint32_t conn) {
  auto it = loans_.find(key);
  if (it == loans_.end() || !it->second.revoking || !it->second.holders.erase(conn)) return false;
  if (it->second.holders.empty()) drop(it);
  return true;
}

// Its queue pair is gone, so it writes nothing more: a loan nobody holds is dropped.
void RegionLender::connectionGone(uint32_t conn) {
  for (auto it = loans_.begin(); it != loans_.end();) {
    if (it->second.holders.erase(conn) && it->second.holders.empty()) {
      it = drop(it);
    } else {
      ++it;
    }
  }
}

void RegionLender::clear() {
  for (auto it = loans_.begin(); it != loans_.end();) it = drop(it);
}

// The device forgets the memory before the table may release it.
RegionLender::Loans::iterator RegionLender::drop(Loans::iterator it) {
  it->second.mr.reset();
  regions_.cancel(it->second.pin);
  return loans_.erase(it);
}

}  // namespace rvma::verbs
