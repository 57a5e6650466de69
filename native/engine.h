// An endpoint's native half: mailbox table + providers + progress + the event queue that
// carries completions, put outcomes and connection news up to JS, one wake-up per batch.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "auth/peer_auth.h"
#include "core/completion_claim.h"
#include "core/event_sink.h"
#include "core/mailbox_table.h"
#include "core/put_counters.h"
#include "core/region_table.h"
#include "progress.h"
#include "providers/option_bag.h"
#include "providers/provider.h"

namespace rvma {

enum class EventKind : uint32_t {
  Completion = 1,  // status 1: vaddr indexes the batch's texts, the sender's node id (reportSender)
  PutDone = 2,  // status; with ops 1, vaddr indexes the batch's texts: why it failed
  MailboxReleased = 3,
  Connected = 4,
  ProtocolError = 5,
  RawWritten = 6,  // id: region id, epoch: offset, bytes: length
  RegionReleased = 7,
  PeerLost = 8,  // texts: the node id, its incarnation (hex), why the connection ended
  CounterReached = 9,  // id: the put counter's slot, whose armed level was reached
  AuthFailed = 10,     // texts as ProtocolError: the peer, then why
  Notify = 11,  // id: a claim's id (Engine::notify); with status 1, vaddr indexes the batch's texts
};

// Flat so the addon can hand a batch to JS as one typed array (kWords per event).
// Connected and ProtocolError carry text: `vaddr` then indexes the batch's texts
// (ProtocolError: the peer at that index, the message at the next).
struct Event {
  static constexpr size_t kWords = 8;
  uint64_t kind, id, vaddr, epoch, bufferIndex, bytes, ops, status;
};

struct EventBatch {
  std::vector<Event> events;
  std::vector<std::string> texts;
};

struct EngineOptions {
  std::string nodeId;
  ProgressMode progress = ProgressMode::Loop;
  std::string provider = "auto";  // "auto", or the one provider (providers/provider_kinds.cpp) puts may use
  std::string listen;             // "" or an address in one provider's scheme ("tcp://HOST:PORT")
  std::map<std::string, OptionBag> groups;  // each provider's options, under its name
  std::string authSecret;  // non-empty: every peer must prove it knows this secret (auth/peer_auth.h)
};

class Engine final : public EventSink, public std::enable_shared_from_this<Engine> {
 public:
  // nullptr with *error set when the node id is taken in-process (*status MailboxExists)
  // or the listen address cannot be bound (*status InvalidArgument).
  // poller: loop mode's event-loop fd watcher (must outlive close()); nullptr for thread mode.
  static std::shared_ptr<Engine> create(const EngineOptions& options, Status* status, std::string* error,
                                        ExternalPoller* poller = nullptr);
  ~Engine() override;

  MailboxTable& table() { return *table_; }
  RegionTable& regions() { return regions_; }
  const std::string& nodeId() const { return options_.nodeId; }
  // Each provider this endpoint runs, in routing order, and where it accepts peers ("" nowhere).
  std::vector<std::pair<std::string, std::string>> listenAddresses() const;
  // The peers each provider is connected to (JS thread).
  std::vector<PeerInfo> peers() const;
  // Why provider 'auto' runs another provider in place of the one its listen address named
  // (tcp for an rdma:// address where verbs cannot run); "" otherwise.
  const std::string& fallback() const { return fallback_; }
  uint64_t incarnation() const { return incarnation_; }

  // A put id that reports nothing: for a native protocol's record whose loss the protocol
  // notices by itself (a ring credit). Unique like every put id (transports keep puts apart by
  // id), and far above JS's request numbers and below the counters' flag (CounterPutId).
  uint64_t unreportedPutId() { return kUnreportedFlag | unreported_.fetch_add(1, std::memory_order_relaxed); }
  // Ok: accepted, the outcome arrives as a PutDone event. Anything else: refused now.
  // A put whose id names a counter (CounterPutId) is always accepted: its outcome, a refusal
  // now included, bumps the counter, and only a failure comes up as a PutDone event.
  Status put(PutRequest req);
  PutCounters& counters() { return counters_; }
  // The puts JS made in this turn go out now (thread mode: if the worker sleeps; a busy worker
  // sends them at the end of its round).
  void flush();
  // A provider holds work back for the end of this turn, so JS must flush() (it does not after
  // a put that left nothing for the round's end, e.g. one shm wrote at once).
  bool roundDue() const { return progress_.isRoundDue(); }
  // The outcome arrives as a Connected event carrying the peer's node id.
  Status connect(uint64_t requestId, const std::string& address);
  // RegionTable::remove, then the providers stop lending the region to peers.
  Status deregisterRegion(uint64_t key, bool* released);
  // The JS memory named `memory` in puts and posts was collected: registrations of it go.
  void forgetMemory(uint64_t memory);
  // The verbs registration cache's counters: registered, reused, evicted, cachedBytes.
  // False when the endpoint runs no verbs provider.
  bool registrationStats(uint64_t out[4]) const;
  // Completions of the mailbox `mailboxId` go to `claim` instead of up to JS, until unclaim().
  void claim(uint32_t mailboxId, std::shared_ptr<CompletionClaim> claim);
  void unclaim(uint32_t mailboxId);
  // Any thread: a Notify event for JS, carrying `id` (and `text` when not empty).
  void notify(uint64_t id, const std::string& text = std::string());
  // wake() is called at most once between two drain() calls, from any thread.
  void setWake(std::function<void()> wake);
  EventBatch drain();
  void close();

  // Loop mode, with a provider's busy polling on: the event loop spins for busyPollUs after
  // activity, calling pollOnce() each round, and beforeSleep() before it blocks again.
  uint32_t busyPollUs() const { return progress_.busyPollUs(); }
  // Thread mode: how often the progress thread woke from a sleep with work (0 in loop mode).
  uint64_t progressWakeups() const { return progress_.wakeups(); }
  int pollOnce();
  // True when a provider did work (its events are pending: drain them, then ask again).
  bool beforeSleep();
  bool hasSleepHooks() const { return progress_.hasSleepHooks(); }

  // Loop mode: an fd the poller watches is ready. Events pushed meanwhile skip the
  // wake-up: the caller drains right after.
  void dispatch(uint64_t token, uint32_t epollEvents);

  // EventSink
  void completions(const std::vector<CompletionRecord>& records) override;
  void mailboxReleased(uint32_t mailboxId) override;
  using EventSink::putSettled;
  void putSettled(uint64_t putId, Status status, const std::string& reason) override;
  void connected(uint64_t requestId, Status status, const std::string& detail) override;
  void protocolError(const std::string& peer, const std::string& message) override;
  void authFailed(const std::string& peer, const std::string& message) override;
  void rawWritten(uint32_t regionId, uint64_t offset, uint64_t len) override;
  void peerLost(const std::string& node, uint64_t incarnation, const std::string& why) override;
  void regionReleased(uint32_t regionId) override;

 private:
  explicit Engine(const EngineOptions& options);
  bool openProviders(const ProviderContext& ctx, Status* status, std::string* error);
  CompletionClaim* claimOf(uint32_t mailboxId);
  void push(Event e, std::initializer_list<std::string> texts = {});

  EngineOptions options_;
  uint64_t incarnation_;
  auth::PeerAuth auth_;
  std::shared_ptr<MailboxTable> table_;
  RegionTable regions_;
  PutCounters counters_;
  Progress progress_;
  // In routing order: the first that reaches a peer carries its puts.
  std::vector<std::unique_ptr<Provider>> providers_;
  std::string fallback_;
  static constexpr uint64_t kUnreportedFlag = 1ull << 51;
  std::atomic<uint64_t> unreported_{0};
  std::mutex claimsMu_;
  std::unordered_map<uint32_t, std::shared_ptr<CompletionClaim>> claims_;
  std::atomic<bool> anyClaims_{false};
  std::mutex eventsMu_;
  EventBatch pending_;
  std::function<void()> wake_;
  std::atomic<bool> wakePending_{false};
  std::atomic<bool> polling_{false};
  std::atomic<bool> closed_{false};
};

}  // namespace rvma
