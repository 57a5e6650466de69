// An endpoint's native half: mailbox table + providers + progress + the event queue that
// carries completions and put outcomes up to JS, with one wake-up per batch.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/event_sink.h"
#include "core/mailbox_table.h"
#include "progress.h"
#include "providers/provider.h"

namespace rvma {

enum class EventKind : uint32_t { Completion = 1, PutDone = 2, MailboxReleased = 3 };

// Flat so the addon can hand a batch to JS as one BigUint64Array (kWords per event).
struct Event {
  static constexpr size_t kWords = 8;
  uint64_t kind, id, vaddr, epoch, bufferIndex, bytes, ops, status;
};

struct EngineOptions {
  std::string nodeId;
  ProgressMode progress = ProgressMode::Loop;
};

class Engine final : public EventSink, public std::enable_shared_from_this<Engine> {
 public:
  // Fails with MailboxExists-like semantics (nullptr) when the node id is taken in-process.
  static std::shared_ptr<Engine> create(const EngineOptions& options, Status* status);
  ~Engine() override;

  MailboxTable& table() { return *table_; }
  const std::string& nodeId() const { return options_.nodeId; }

  // Ok: accepted, the outcome arrives as a PutDone event. Anything else: refused now.
  Status put(PutRequest req);
  // wake() is called at most once between two drain() calls, from any thread.
  void setWake(std::function<void()> wake);
  std::vector<Event> drain();
  void close();

  // EventSink
  void completions(const std::vector<CompletionRecord>& records) override;
  void mailboxReleased(uint32_t mailboxId) override;
  void putDone(uint64_t putId, Status status) override;

 private:
  explicit Engine(const EngineOptions& options);
  void push(const Event& e);

  EngineOptions options_;
  std::shared_ptr<MailboxTable> table_;
  Progress progress_;
  std::vector<std::unique_ptr<Provider>> providers_;
  std::mutex eventsMu_;
  std::vector<Event> events_;
  std::function<void()> wake_;
  std::atomic<bool> wakePending_{false};
  std::atomic<bool> closed_{false};
};

}  // namespace rvma
