#include "region_table.h"

#include <random>

namespace rvma {

void RegionTable::add(uint8_t* data, uint64_t len, AccessPolicy access, uint64_t* key, uint32_t* id) {
  std::random_device entropy;  // the OS source: keys act as capabilities, so no PRNG
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t k;
  do k = (uint64_t(entropy()) << 32) ^ entropy(); while (k == 0 || regions_.count(k));
  *id = nextId_++;
  regions_.emplace(k, std::make_unique<Region>(Region{*id, data, len, std::move(access)}));
  *key = k;
}

Status RegionTable::remove(uint64_t key, bool* released) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it == regions_.end()) return Status::NoMailbox;
  std::unique_ptr<Region> region = std::move(it->second);
  regions_.erase(it);
  region->closed = true;
  *released = region->inflight == 0;
  if (!*released) {
    Region* raw = region.get();
    draining_.emplace(raw, std::move(region));
  }
  return Status::Ok;
}

Status RegionTable::permits(uint64_t key, std::string_view sender) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it == regions_.end()) return Status::NoMailbox;
  return it->second->access.permits(sender) ? Status::Ok : Status::Forbidden;
}

Status RegionTable::reserve(uint64_t key, uint64_t offset, uint64_t len, std::string_view sender, RegionReservation* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it == regions_.end()) return Status::NoMailbox;
  Region* region = it->second.get();
  if (!region->access.permits(sender)) return Status::Forbidden;
  if (len > region->len) return Status::TooLarge;
  if (offset > region->len || len > region->len - offset) return Status::OutOfBounds;
  region->inflight++;
  *out = RegionReservation{region, region->data + offset, offset, len};
  return Status::Ok;
}

Status RegionTable::pin(uint64_t key, RegionReservation* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(key);
  if (it == regions_.end()) return Status::NoMailbox;
  Region* region = it->second.get();
  region->inflight++;
  *out = RegionReservation{region, region->data, 0, region->len};
  return Status::Ok;
}

void RegionTable::commit(const RegionReservation& r) { finish(r, true); }
void RegionTable::cancel(const RegionReservation& r) { finish(r, false); }

void RegionTable::finish(const RegionReservation& r, bool commit) {
  std::lock_guard<std::mutex> lock(mu_);
  Region* region = r.region;
  region->inflight--;
  if (commit && !region->closed) events_.rawWritten(region->id, r.offset, r.len);
  if (region->closed && region->inflight == 0) {
    events_.regionReleased(region->id);
    draining_.erase(region);
  }
}

}  // namespace rvma
