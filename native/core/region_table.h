// Registered regions for raw one-sided writes (the baseline that mailbox puts are measured
// against): a writer names a region by its key and an offset, like an RDMA rkey + address.
// Keys are random and every (key, offset, len) is checked here, on the receiver.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "access.h"
#include "event_sink.h"
#include "status.h"

namespace rvma {

struct Region {
  uint32_t id;
  uint8_t* data;
  uint64_t len;
  AccessPolicy access;
  uint32_t inflight = 0;
  bool closed = false;
};

struct RegionReservation {
  Region* region = nullptr;
  uint8_t* dst = nullptr;
  uint64_t offset = 0, len = 0;
};

class RegionTable {
 public:
  explicit RegionTable(EventSink& events) : events_(events) {}
  void add(uint8_t* data, uint64_t len, AccessPolicy access, uint64_t* key, uint32_t* id);
  // released: false when a write is still landing (a RegionReleased event follows).
  Status remove(uint64_t key, bool* released);
  // sender: the node writing, checked against the region's AccessPolicy.
  Status reserve(uint64_t key, uint64_t offset, uint64_t len, std::string_view sender, RegionReservation* out);
  // Whether `sender` may write region `key` at all: Ok, NoMailbox (no such key) or Forbidden.
  // A transport that lends a pinned region to a peer asks this before every loan.
  Status permits(uint64_t key, std::string_view sender);
  // Reserves the whole region for a transport that lets a peer write it directly (RDMA):
  // it is not released until cancel(), so its memory outlives every write in flight.
  Status pin(uint64_t key, RegionReservation* out);
  void commit(const RegionReservation& r);  // reports RawWritten to the region's owner
  void cancel(const RegionReservation& r);

 private:
  void finish(const RegionReservation& r, bool commit);

  EventSink& events_;
  std::mutex mu_;
  std::unordered_map<uint64_t, std::unique_ptr<Region>> regions_;
  std::unordered_map<Region*, std::unique_ptr<Region>> draining_;
  uint32_t nextId_ = 1;
};

}  // namespace rvma
