#include "engine.h"

#include <random>

#include "core/process_nodes.h"
#include "providers/provider_kind.h"

namespace rvma {

namespace {
uint64_t randomIncarnation() {
  std::random_device rd;
  uint64_t v = (uint64_t(rd()) << 32) ^ rd();
  return v ? v : 1;
}
}  // namespace

Engine::Engine(const EngineOptions& options)
    : options_(options), incarnation_(randomIncarnation()), auth_(options.authSecret), table_(std::make_shared<MailboxTable>(*this)),
      regions_(*this), progress_(options.progress) {}

std::shared_ptr<Engine> Engine::create(const EngineOptions& options, Status* status, std::string* error,
                                       ExternalPoller* poller) {
  std::shared_ptr<Engine> engine(new Engine(options));
  if (options.progress == ProgressMode::Loop) engine->progress_.usePoller(poller);
  ProviderContext ctx{options.nodeId, *engine->table_, engine->regions_, *engine, engine->progress_, engine->auth_};
  if (!engine->openProviders(ctx, status, error)) return nullptr;
  // Aliasing pointer: a peer holding the table keeps the whole engine (and its sink) alive.
  std::shared_ptr<MailboxTable> table(engine, engine->table_.get());
  if (!ProcessNodes::instance().attach(options.nodeId, table, engine->incarnation_, &engine->auth_)) {
    *status = Status::InvalidArgument;  // the caller's argument: docs/api.md, ERR_RVMA_INVALID_ARGUMENT
    *error = "node id \"" + options.nodeId + "\" is already used by an open endpoint in this process";
    return nullptr;
  }
  // Each starts before the worker exists, so no race on its registrations.
  for (auto& provider : engine->providers_) provider->start();
  engine->progress_.start();
  *status = Status::Ok;
  return engine;
}

// Opens, in routing order, the providers this endpoint runs: the one named, or with "auto"
// each that runs there. A provider that cannot open fails the endpoint, unless "auto" lets
// its fallback listen at the same host and port in its place.
bool Engine::openProviders(const ProviderContext& ctx, Status* status, std::string* error) {
  const std::string& only = options_.provider;
  const bool automatic = only == "auto";
  if (!automatic && !findProviderKind(only)) {
    *status = Status::InvalidArgument;
    *error = "this build of rvma has no provider \"" + only + "\"";
    return false;
  }
  static const OptionBag kDefaults;
  std::map<std::string, std::string> fallbackListen;  // a fallback's name -> where it listens instead
  for (const ProviderKind* kind : providerKinds()) {
    auto group = options_.groups.find(kind->name());
    const std::string scheme = kind->scheme();
    std::string listen;
    if (!scheme.empty() && options_.listen.compare(0, scheme.size(), scheme) == 0) listen = options_.listen;
    if (listen.empty() && fallbackListen.count(kind->name())) listen = fallbackListen[kind->name()];
    ProviderSetup setup{group == options_.groups.end() ? kDefaults : group->second, listen, incarnation_};
    if (!(automatic ? kind->runsInAuto(setup) : only == kind->name())) continue;
    std::string why;
    std::unique_ptr<Provider> provider = kind->open(ctx, setup, status, &why);
    if (provider) {
      providers_.push_back(std::move(provider));
      continue;
    }
    const std::string instead = kind->fallback();
    if (!automatic || instead.empty()) {
      *error = why;
      return false;
    }
    // The fallback listens at the same host and port, unless the endpoint names its own address.
    const ProviderKind* other = findProviderKind(instead);
    if (!listen.empty() && other) {
      fallbackListen[instead] = other->scheme() + listen.substr(scheme.size());
    }
    fallback_ = std::string(kind->name()) + " is unavailable (" + why + "): using " + instead;
  }
  return true;
}

Engine::~Engine() { close(); }

std::vector<std::pair<std::string, std::string>> Engine::listenAddresses() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : providers_) {
    out.emplace_back(p->name(), p->boundAddress());
  }
  return out;
}

std::vector<PeerInfo> Engine::peers() const {
  std::vector<PeerInfo> out;
  if (closed_) return out;
  for (const auto& p : providers_) p->describePeers(&out);
  return out;
}

Status Engine::put(PutRequest req) {
  if (closed_) return Status::Closed;
  bool known = false;
  for (auto& provider : providers_) {
    if (!provider->reaches(*req.peer)) continue;
    known = true;
    if (req.raw && !provider->supportsRaw()) continue;
    Provider* p = provider.get();
    if (req.gathered() && !p->gathers(req)) req.join();
    // Here when this thread is the progress context (loop mode, or a thread-mode worker that
    // sleeps): no task to build, and a provider that keeps bytes on demand copies only those it
    // keeps. Otherwise the worker takes it, with its bytes copied now.
    if (!p->keepsOnDemand()) req.keep();
    if (progress_.runHereIfIdle([&] { p->put(std::move(req)); })) return Status::Ok;
    req.keep();
    progress_.submit([p, req = std::move(req)]() mutable { p->put(std::move(req)); });
    return Status::Ok;
  }
  // Aimed at a known incarnation that nothing reaches any more: that node is gone.
  Status refused = req.incarnation && !known ? Status::PeerLost : Status::NoPeer;
  if (!CounterPutId::is(req.id)) return refused;
  putSettled(req.id, refused);
  return Status::Ok;
}

void Engine::flush() {
  if (!closed_) progress_.endRoundIfIdle();
}

Status Engine::connect(uint64_t requestId, const std::string& address) {
  if (closed_) return Status::Closed;
  for (auto& provider : providers_) {
    Status s = provider->dialable(address);
    if (s == Status::NoPeer) continue;
    if (!ok(s)) return s;
    Provider* p = provider.get();
    progress_.submit([p, requestId, address] { p->connect(requestId, address); });
    return Status::Ok;
  }
  return Status::NoPeer;
}

Status Engine::deregisterRegion(uint64_t key, bool* released) {
  Status s = regions_.remove(key, released);
  if (!ok(s) || closed_) return s;
  for (auto& provider : providers_) {
    Provider* p = provider.get();
    if (p->supportsRaw()) progress_.submit([p, key] { p->regionClosed(key); });
  }
  return s;
}

void Engine::forgetMemory(uint64_t memory) {
  if (closed_) return;
  for (auto& provider : providers_) {
    Provider* p = provider.get();
    progress_.submit([p, memory] { p->memoryGone(memory); });
  }
}

bool Engine::registrationStats(uint64_t out[4]) const {
  for (const auto& p : providers_) {
    if (p->registrationStats(out)) return true;
  }
  return false;
}

void Engine::dispatch(uint64_t token, uint32_t epollEvents) {
  polling_ = true;
  progress_.dispatch(token, epollEvents);
  polling_ = false;
}

bool Engine::beforeSleep() {
  polling_ = true;  // the caller drains after: no wake-up for the events it makes
  bool worked = progress_.beforeSleep();
  if (worked) progress_.endRound();
  polling_ = false;
  return worked;
}

int Engine::pollOnce() {
  polling_ = true;
  int work = progress_.pollOnce();
  polling_ = false;
  return work;
}

void Engine::setWake(std::function<void()> wake) {
  std::lock_guard<std::mutex> lock(eventsMu_);
  wake_ = std::move(wake);
}

EventBatch Engine::drain() {
  wakePending_ = false;
  EventBatch out;
  std::lock_guard<std::mutex> lock(eventsMu_);
  std::swap(out, pending_);
  return out;
}

void Engine::close() {
  if (closed_.exchange(true)) return;
  ProcessNodes::instance().detach(options_.nodeId, table_.get());
  progress_.stop();
  for (auto& provider : providers_) provider->close();
  progress_.usePoller(nullptr);  // the poller may go away after close
  table_->closeAll();  // waits for in-process writers still copying into our buffers
  std::lock_guard<std::mutex> lock(eventsMu_);
  wake_ = nullptr;
  pending_ = EventBatch{};
}

// wake_ is called under the lock so close() can be sure no call is in progress after it.
// Texts (peer ids and messages come off the wire and may hold anything) travel beside the
// event; its `vaddr` word then indexes the first of them.
void Engine::push(Event e, std::initializer_list<std::string> texts) {
  std::lock_guard<std::mutex> lock(eventsMu_);
  if (closed_) return;  // JS settles everything itself on close
  if (texts.size()) e.vaddr = pending_.texts.size();
  pending_.events.push_back(e);
  pending_.texts.insert(pending_.texts.end(), texts);
  if (wake_ && !polling_ && !wakePending_.exchange(true)) wake_();
}

void Engine::claim(uint32_t mailboxId, std::shared_ptr<CompletionClaim> claim) {
  std::lock_guard<std::mutex> lock(claimsMu_);
  claims_[mailboxId] = std::move(claim);
  anyClaims_ = true;
}

void Engine::unclaim(uint32_t mailboxId) {
  std::lock_guard<std::mutex> lock(claimsMu_);
  claims_.erase(mailboxId);
  anyClaims_ = !claims_.empty();
}

void Engine::notify(uint64_t id, const std::string& text) {
  if (text.empty()) push(Event{uint64_t(EventKind::Notify), id, 0, 0, 0, 0, 0, 0});
  else push(Event{uint64_t(EventKind::Notify), id, 0, 0, 0, 0, 0, 1}, {text});
}

CompletionClaim* Engine::claimOf(uint32_t mailboxId) {
  if (!anyClaims_) return nullptr;
  std::lock_guard<std::mutex> lock(claimsMu_);
  auto it = claims_.find(mailboxId);
  return it == claims_.end() ? nullptr : it->second.get();
}

// A claim stays alive while its mailbox can complete: unclaim() comes after the mailbox closed,
// and closing takes the table lock these records are reported under.
void Engine::completions(const std::vector<CompletionRecord>& records) {
  for (const auto& r : records) {
    if (CompletionClaim* claim = claimOf(r.mailboxId)) {
      claim->completed(r);
      continue;
    }
    Event e{uint64_t(EventKind::Completion), r.mailboxId, r.vaddr, r.epoch, r.bufferIndex, r.bytes, r.ops, 0};
    if (r.sender.empty()) {
      push(e);
    } else {
      e.status = 1;  // vaddr now indexes the sender's text
      push(e, {r.sender});
    }
  }
}

void Engine::mailboxReleased(uint32_t mailboxId) {
  push(Event{uint64_t(EventKind::MailboxReleased), mailboxId, 0, 0, 0, 0, 0, 0});
}

// A counted put comes up only when it failed (JS reports it with its index), or when its
// outcome reached a level a waiter armed.
void Engine::putSettled(uint64_t putId, Status status, const std::string& reason) {
  // From close on nothing is reported: JS settles what is left itself (a counter reports its
  // puts still in flight as lost, with ERR_RVMA_CLOSED).
  if (closed_ || (!CounterPutId::is(putId) && (putId & kUnreportedFlag))) return;
  bool reached = false;
  if (CounterPutId::is(putId)) counters_.settle(CounterPutId::slot(putId), uint32_t(putId), status, &reached);
  // The failure first: a waiter woken by its level has heard of the failures within it.
  if (!CounterPutId::is(putId) || !ok(status)) {
    if (reason.empty()) push(Event{uint64_t(EventKind::PutDone), putId, 0, 0, 0, 0, 0, uint64_t(status)});
    else push(Event{uint64_t(EventKind::PutDone), putId, 0, 0, 0, 0, 1, uint64_t(status)}, {reason});
  }
  if (reached) push(Event{uint64_t(EventKind::CounterReached), CounterPutId::slot(putId), 0, 0, 0, 0, 0, 0});
}

void Engine::connected(uint64_t requestId, Status status, const std::string& detail) {
  push(Event{uint64_t(EventKind::Connected), requestId, 0, 0, 0, 0, 0, uint64_t(status)}, {detail});
}

void Engine::rawWritten(uint32_t regionId, uint64_t offset, uint64_t len) {
  push(Event{uint64_t(EventKind::RawWritten), regionId, 0, offset, 0, len, 1, 0});
}

void Engine::peerLost(const std::string& node, uint64_t incarnation, const std::string& why) {
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(incarnation));
  push(Event{uint64_t(EventKind::PeerLost), 0, 0, 0, 0, 0, 0, 0}, {node, hex, why});
}

void Engine::regionReleased(uint32_t regionId) {
  push(Event{uint64_t(EventKind::RegionReleased), regionId, 0, 0, 0, 0, 0, 0});
}

void Engine::protocolError(const std::string& peer, const std::string& message) {
  push(Event{uint64_t(EventKind::ProtocolError), 0, 0, 0, 0, 0, 0, 0}, {peer, message});
}

void Engine::authFailed(const std::string& peer, const std::string& message) {
  push(Event{uint64_t(EventKind::AuthFailed), 0, 0, 0, 0, 0, 0, 0}, {peer, message});
}

}  // namespace rvma
