// The one interface every transport implements. A provider moves a put to the peer and
// reports its outcome upward exactly once (EventSink::putDone); on arrival it places bytes
// through the receiver's MailboxTable (reserve / write / commit) and never touches JS.
#pragma once
#include <cstdint>
#include <string>

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
  virtual void close() = 0;
};

}  // namespace rvma
