// The one interface every transport implements. A provider moves a put to the peer and
// reports its outcome upward exactly once (EventSink::putDone); on arrival it places bytes
// through the receiver's MailboxTable (reserve / write / commit) and never touches JS.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "../core/event_sink.h"
#include "../core/mailbox.h"
#include "../core/mailbox_table.h"
#include "../core/region_table.h"
#include "../progress.h"

namespace rvma {

struct PutRequest {
  uint64_t id;
  std::string peer;  // node id
  uint64_t vaddr;
  const uint8_t* data;  // owned by the caller until putDone
  uint64_t len;
  Placement where;
  bool raw = false;  // a one-sided write: vaddr is the region key, where.offset the offset
  uint32_t parts = 0;  // set by a striping provider on each part of a split put...
  uint64_t wholeOffset = 0, wholeLen = 0;  // ...with the range of the whole put
  uint64_t incarnation = 0;  // nonzero: only that incarnation of the peer may take the put
  uint64_t memory = 0;  // names the JS memory holding data while it lives (0: unknown), see memoryGone
};

// What a provider may use of its endpoint.
struct ProviderContext {
  std::string nodeId;
  MailboxTable& table;
  RegionTable& regions;
  EventSink& events;
  Progress& progress;
};

// A connected peer as a provider describes it (Endpoint.peers()).
struct PeerInfo {
  std::string node;
  std::string provider;
  std::string detail;  // shm: "cma" (large puts pulled by the peer) or "copy" (through the ring)
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual const char* name() const = 0;
  virtual bool reaches(const std::string& peer) = 0;
  virtual bool supportsRaw() const { return false; }
  // Runs on the progress context; must end in exactly one events.putDone(req.id, ...).
  virtual void put(const PutRequest& req) = 0;
  // A region of this endpoint closed (progress context): a provider that lets peers write
  // regions directly withdraws it, and holds the region until no write can land any more.
  virtual void regionClosed(uint64_t key) {}
  // JS memory named by PutRequest::memory / PostedBuffer::memory was collected (progress
  // context): a provider that keeps registrations of it drops them.
  virtual void memoryGone(uint64_t memory) {}
  // Whether connect() takes this address: NoPeer when it is not this provider's scheme,
  // InvalidArgument when it is but malformed, Ok when it will dial it.
  virtual Status dialable(const std::string& address) const { return Status::NoPeer; }
  // Progress context; ends in exactly one events.connected(requestId, ...).
  virtual void connect(uint64_t requestId, const std::string& address) {}
  // Where peers dial this provider ("" when it accepts nothing).
  virtual std::string boundAddress() const { return std::string(); }
  // JS thread: the peers this provider is connected to now.
  virtual void describePeers(std::vector<PeerInfo>* out) {}
  // The memory registration cache's counters (registered, reused, evicted, cachedBytes).
  virtual bool registrationStats(uint64_t out[4]) const { return false; }
  virtual void close() = 0;
};

}  // namespace rvma
