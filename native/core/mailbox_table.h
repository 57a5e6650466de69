// vaddr -> Mailbox translation for one endpoint, and the narrow interface providers use to
// place puts: reserve (translate + bounds check), write the payload, then commit or cancel.
// Thread-safe: JS-thread calls and progress-thread arrivals serialise on one lock; payload
// bytes are written outside it.
#pragma once
#include <cstdint>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "completion_words.h"
#include "event_sink.h"
#include "mailbox.h"

namespace rvma {

struct OpenedMailbox {
  uint32_t id;
  uint32_t slot;
};

class MailboxTable {
 public:
  explicit MailboxTable(EventSink& events) : events_(events) {}
  // Where this table's endpoint reports upward (the loopback provider reports refusals there).
  EventSink& events() { return events_; }
  ~MailboxTable();

  Status open(uint64_t vaddr, const MailboxConfig& cfg, OpenedMailbox* out);
  // released: false when puts are still being written into it (a release event follows).
  Status close(uint64_t vaddr, bool* released);
  Status post(uint64_t vaddr, uint8_t* data, uint64_t size, uint64_t threshold, uint64_t memory, uint64_t* indexOut);
  Status incEpoch(uint64_t vaddr);
  // From now on only `access` may place puts; puts already reserved finish as they are.
  Status setAccess(uint64_t vaddr, AccessPolicy access);
  // Closes every mailbox and returns once no put is still writing into their buffers.
  void closeAll();

  // Provider interface.
  // sender: the node the put came from, checked against the mailbox's AccessPolicy.
  Status reserve(uint64_t vaddr, const Placement& where, uint64_t len, std::string_view sender, Reservation* out);
  void commit(const Reservation& r, uint64_t ops = 1);
  void cancel(const Reservation& r);
  // reserve + copy + commit, for providers that hold the whole payload in memory.
  Status deliver(uint64_t vaddr, const Placement& where, const uint8_t* data, uint64_t len, std::string_view sender);

  size_t openCount();
  std::shared_ptr<CompletionPage> completionPage(uint32_t index);

 private:
  // A payload up to this size is copied under the table lock by deliver(): one lock, not two.
  static constexpr uint64_t kCopyUnderLockMax = 4096;

  Mailbox* find(uint64_t vaddr);
  void finish(const Reservation& r, bool commit, uint64_t ops);
  // The same, with mu_ held.
  Status reserveLocked(uint64_t vaddr, const Placement& where, uint64_t len, std::string_view sender, Reservation* out);
  void finishLocked(const Reservation& r, bool commit, uint64_t ops);

  EventSink& events_;
  std::mutex mu_;
  std::condition_variable drained_;
  std::unordered_map<uint64_t, std::unique_ptr<Mailbox>> open_;
  std::unordered_map<Mailbox*, std::unique_ptr<Mailbox>> draining_;  // closed, puts in flight
  CompletionWords words_;
  uint32_t nextId_ = 1;
};

}  // namespace rvma
