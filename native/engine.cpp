#include "engine.h"

#include "providers/loopback/loopback_fabric.h"
#include "providers/loopback/loopback_provider.h"

namespace rvma {

Engine::Engine(const EngineOptions& options)
    : options_(options), table_(std::make_shared<MailboxTable>(*this)), progress_(options.progress) {}

std::shared_ptr<Engine> Engine::create(const EngineOptions& options, Status* status) {
  std::shared_ptr<Engine> engine(new Engine(options));
  // Aliasing pointer: a peer holding the table keeps the whole engine (and its sink) alive.
  std::shared_ptr<MailboxTable> table(engine, engine->table_.get());
  if (!LoopbackFabric::instance().attach(options.nodeId, table)) {
    *status = Status::MailboxExists;
    return nullptr;
  }
  engine->providers_.push_back(std::make_unique<LoopbackProvider>(
      ProviderContext{options.nodeId, *engine->table_, *engine, engine->progress_}));
  *status = Status::Ok;
  return engine;
}

Engine::~Engine() { close(); }

Status Engine::put(PutRequest req) {
  if (closed_) return Status::Closed;
  for (auto& provider : providers_) {
    if (!provider->reaches(req.peer)) continue;
    Provider* p = provider.get();
    progress_.submit([p, req = std::move(req)] { p->put(req); });
    return Status::Ok;
  }
  return Status::NoPeer;
}

void Engine::setWake(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(eventsMu_);
  wake_ = std::move(wake);
}

std::vector<Event> Engine::drain() {
  wakePending_ = false;
  std::vector<Event> out;
  std::lock_guard<std::mutex> lock(eventsMu_);
  out.swap(events_);
  return out;
}

void Engine::close() {
  if (closed_.exchange(true)) return;
  LoopbackFabric::instance().detach(options_.nodeId, table_.get());
  progress_.stop();
  for (auto& provider : providers_) provider->close();
  table_->closeAll();
  std::lock_guard<std::mutex> lock(eventsMu_);
  wake_ = nullptr;
  events_.clear();
}

// wake_ is called under the lock so close() can be sure no call is in progress after it.
void Engine::push(const Event& e) {
  std::lock_guard<std::mutex> lock(eventsMu_);
  events_.push_back(e);
  if (wake_ && !wakePending_.exchange(true)) wake_();
}

void Engine::completions(const std::vector<CompletionRecord>& records) {
  for (const auto& r : records) {
    push(Event{uint64_t(EventKind::Completion), r.mailboxId, r.vaddr, r.epoch, r.bufferIndex, r.bytes, r.ops, 0});
  }
}

void Engine::mailboxReleased(uint32_t mailboxId) {
  push(Event{uint64_t(EventKind::MailboxReleased), mailboxId, 0, 0, 0, 0, 0, 0});
}

void Engine::putDone(uint64_t putId, Status status) {
  push(Event{uint64_t(EventKind::PutDone), putId, 0, 0, 0, 0, 0, uint64_t(status)});
}

}  // namespace rvma
