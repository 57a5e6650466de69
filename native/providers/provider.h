// The one interface every transport implements. A provider moves a put to the peer and
// reports its outcome upward exactly once (EventSink::putSettled); on arrival it places bytes
// through the receiver's MailboxTable (reserve / write / commit) and never touches JS.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../auth/peer_auth.h"
#include "../core/event_sink.h"
#include "../core/mailbox.h"
#include "../core/mailbox_table.h"
#include "../core/region_table.h"
#include "../progress.h"

namespace rvma {

// A node id (or an address) shared by every request to it: copying a request copies no string.
using PeerName = std::shared_ptr<const std::string>;
inline PeerName peerName(std::string name) { return std::make_shared<const std::string>(std::move(name)); }

// len bytes owned together by the copies of a request: one allocation when they are few.
inline std::shared_ptr<uint8_t> ownedBytes(uint64_t len) {
  if (len <= 64) {
    auto small = std::make_shared<std::array<uint8_t, 64>>();
    return std::shared_ptr<uint8_t>(small, small->data());
  }
  if (len <= 512) {
    auto medium = std::make_shared<std::array<uint8_t, 512>>();
    return std::shared_ptr<uint8_t>(medium, medium->data());
  }
  // Not zeroed: it is written whole at once (a memset of a copied 16 KiB frame was 12% of a ring's CPU).
  return std::shared_ptr<uint8_t>(new uint8_t[len], std::default_delete<uint8_t[]>());
}

// A put's payload is `len` bytes: `data` alone, or, for a gathered put, `headLen` bytes at
// `head` followed by `len - headLen` bytes at `data`. A provider that cannot send a gathered put
// as it is says so (Provider::gathers) and the engine joins it into owned memory first.
// When a placed put's answer goes back to its sender. Eager: at the end of the receiver's
// round. Lazy: nothing waits on it soon, so it waits for company (the next eager answer or put
// to that sender), at most kLazyAckDelayMs, or until kLazyAckRun such answers wait. Late:
// nothing waits on it at all (only a failure would matter, and failures always go at once), so
// it waits for company at most kLateAckDelayMs, or until kLateAckRun wait: a stream of them wakes
// its sender once per kLateAckRun puts, not per put or per few milliseconds. Either goes at once
// when kLazyAckBytes of their puts wait (a sender holds the bytes of what is not answered).
enum class AckPace : uint8_t { Eager = 0, Lazy = 1, Late = 2 };
constexpr uint64_t kLazyAckDelayMs = 2;
constexpr uint32_t kLazyAckRun = 32;
constexpr uint64_t kLateAckDelayMs = 1000;
constexpr uint32_t kLateAckRun = 256;
constexpr uint64_t kLazyAckBytes = 1ull << 20;

struct PutRequest {
  uint64_t id;
  PeerName peer;  // node id or address
  uint64_t vaddr;
  const uint8_t* data;  // owned by the caller until putSettled
  uint64_t len;         // the whole payload, head included
  Placement where;
  bool raw = false;  // a one-sided write: vaddr is the region key, where.offset the offset
  uint32_t parts = 0;  // set by a striping provider on each part of a split put...
  uint64_t wholeOffset = 0, wholeLen = 0;  // ...with the range of the whole put
  uint64_t incarnation = 0;  // nonzero: only that incarnation of the peer may take the put
  uint64_t memory = 0;  // names the JS memory holding data while it lives (0: unknown), see memoryGone
  const uint8_t* head = nullptr;  // a gathered put's first bytes (owned by the caller, like data)
  uint64_t headLen = 0;
  // How soon the answer is wanted (tcp and shm hold Lazy and Late answers back to save a
  // message and a wake-up; other providers answer every put eagerly). Failures go at once.
  AckPace ack = AckPace::Eager;
  std::shared_ptr<const uint8_t> joined = nullptr;  // the payload, once owned (join, own)
  // Set when the caller's memory is valid only during put(): whoever holds the bytes past that
  // calls keep() first, which makes the request own a copy. A provider that says
  // keepsOnDemand() does so itself; for any other the engine keeps before handing over.
  void (*keeper)(PutRequest&) = nullptr;

  void keep() {
    if (!keeper) return;
    auto k = keeper;
    keeper = nullptr;
    k(*this);
  }

  bool gathered() const { return headLen != 0; }
  // Payload bytes [from, from + n), gathered or not, into dst.
  void copyRange(uint8_t* dst, uint64_t from, uint64_t n) const {
    if (from < headLen) {
      const uint64_t take = std::min(n, headLen - from);
      std::memcpy(dst, head + from, take);
      dst += take;
      from += take;
      n -= take;
    }
    if (n) std::memcpy(dst, data + (from - headLen), n);
  }
  void copyTo(uint8_t* dst) const { copyRange(dst, 0, len); }
  // Makes a gathered payload one contiguous range (data, len) in memory the request owns.
  void join() {
    if (headLen) own();
  }
  // Copies the payload into memory the request owns: the caller's may change at once.
  void own() {
    std::shared_ptr<uint8_t> bytes = ownedBytes(len);
    copyTo(bytes.get());
    data = bytes.get();
    joined = std::move(bytes);
    head = nullptr;
    headLen = 0;
    memory = 0;  // no longer JS memory: nothing may cache a registration of it
    keeper = nullptr;
  }
};

// What a provider may use of its endpoint.
struct ProviderContext {
  std::string nodeId;
  MailboxTable& table;
  RegionTable& regions;
  EventSink& events;
  Progress& progress;
  const auth::PeerAuth& auth;  // enabled: every peer proves the shared secret before its first frame counts
};

// A connected peer as a provider describes it (Endpoint.peers()).
struct PeerInfo {
  std::string node;
  std::string provider;
  std::string detail;  // shm: "arena", "cma" or "copy" (ShmConnection::largePuts)
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual const char* name() const = 0;
  // Once the endpoint's providers are all open, before the progress worker exists: registers
  // its fds and timers with progress.
  virtual void start() {}
  virtual bool reaches(const std::string& peer) = 0;
  virtual bool supportsRaw() const { return false; }
  // Whether put() takes this gathered request as it is; if not, the engine joins it first.
  virtual bool gathers(const PutRequest& req) const { return false; }
  // Whether put() calls PutRequest::keep() before it holds on to a request's bytes past its
  // return (in loop progress, where put() runs in the caller's call).
  virtual bool keepsOnDemand() const { return false; }
  // Runs on the progress context; must end in exactly one events.putSettled(req.id, ...).
  virtual void put(PutRequest req) = 0;
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
