#include "endpoint_wrap.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "convert.h"
#include "js_wake.h"
#include "put_copy.h"
#include "put_flags.h"

namespace rvma::addon {
namespace {

Napi::Value statusError(const Napi::Env& env, Status status, const char* message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("rvmaStatus", Napi::Number::New(env, double(status)));
  error.ThrowAsJavaScriptException();
  return env.Undefined();
}

}  // namespace

Napi::Function EndpointWrap::Define(Napi::Env env) {
  return DefineClass(env, "NativeEndpoint",
                     {
                         InstanceMethod<&EndpointWrap::OpenMailbox>("openMailbox"),
                         InstanceMethod<&EndpointWrap::CloseMailbox>("closeMailbox"),
                         InstanceMethod<&EndpointWrap::SetMailboxAccess>("setMailboxAccess"),
                         InstanceMethod<&EndpointWrap::Post>("post"),
                         InstanceMethod<&EndpointWrap::IncEpoch>("incEpoch"),
                         InstanceMethod<&EndpointWrap::Put>("put"),
                         InstanceMethod<&EndpointWrap::Flush>("flush"),
                         InstanceMethod<&EndpointWrap::Route>("route"),
                         InstanceMethod<&EndpointWrap::PutQueued>("putQueued"),
                         InstanceMethod<&EndpointWrap::CreatePutCounter>("createPutCounter"),
                         InstanceMethod<&EndpointWrap::PutCounterPage>("putCounterPage"),
                         InstanceMethod<&EndpointWrap::ArmPutCounter>("armPutCounter"),
                         InstanceMethod<&EndpointWrap::ReleasePutCounter>("releasePutCounter"),
                         InstanceMethod<&EndpointWrap::SkipCountedPut>("skipCountedPut"),
                         InstanceMethod<&EndpointWrap::Connect>("connect"),
                         InstanceMethod<&EndpointWrap::ForgetMemory>("forgetMemory"),
                         InstanceMethod<&EndpointWrap::RegistrationStats>("registrationStats"),
                         InstanceMethod<&EndpointWrap::RegisterRegion>("registerRegion"),
                         InstanceMethod<&EndpointWrap::DeregisterRegion>("deregisterRegion"),
                         InstanceMethod<&EndpointWrap::ListenAddresses>("listenAddresses"),
                         InstanceMethod<&EndpointWrap::Peers>("peers"),
                         InstanceMethod<&EndpointWrap::Fallback>("fallback"),
                         InstanceMethod<&EndpointWrap::Incarnation>("incarnation"),
                         InstanceMethod<&EndpointWrap::CompletionPage>("completionPage"),
                         InstanceMethod<&EndpointWrap::OpenCount>("openCount"),
                         InstanceMethod<&EndpointWrap::WakeupCounts>("wakeupCounts"),
                         InstanceMethod<&EndpointWrap::Ref>("ref"),
                         InstanceMethod<&EndpointWrap::Unref>("unref"),
                         InstanceMethod<&EndpointWrap::Close>("close"),
                         InstanceMethod<&EndpointWrap::RingOpen>("ringOpen"),
                         InstanceMethod<&EndpointWrap::RingTarget>("ringTarget"),
                         InstanceMethod<&EndpointWrap::RingRelease>("ringRelease"),
                         InstanceMethod<&EndpointWrap::RingGrant>("ringGrant"),
                         InstanceMethod<&EndpointWrap::RingCreditsOpen>("ringCreditsOpen"),
                         InstanceMethod<&EndpointWrap::RingCreditsExpect>("ringCreditsExpect"),
                         InstanceMethod<&EndpointWrap::RingClose>("ringClose"),
                         InstanceMethod<&EndpointWrap::RingOutOpen>("ringOutOpen"),
                         InstanceMethod<&EndpointWrap::RingSend>("ringSend"),
                         InstanceMethod<&EndpointWrap::RingTake>("ringTake"),
                         InstanceMethod<&EndpointWrap::RingOutClose>("ringOutClose"),
                     });
}

namespace {

// An optional array of node ids (the allow option) into *out; false when it is not one.
bool readAllow(const Napi::Value& value, AccessPolicy* out) {
  if (value.IsUndefined()) return true;
  if (!value.IsArray()) return false;
  Napi::Array ids = value.As<Napi::Array>();
  for (uint32_t i = 0; i < ids.Length(); i++) {
    Napi::Value id = ids.Get(i);
    if (!id.IsString()) return false;
    out->allow.push_back(id.As<Napi::String>().Utf8Value());
  }
  return true;
}

// One provider's option group into *bag: own properties of numbers, booleans and strings.
bool readGroup(const Napi::Value& value, OptionBag* bag) {
  if (!value.IsObject()) return false;
  Napi::Object o = value.As<Napi::Object>();
  Napi::Array keys = o.GetPropertyNames();
  for (uint32_t i = 0; i < keys.Length(); i++) {
    std::string key = keys.Get(i).As<Napi::String>().Utf8Value();
    Napi::Value v = o.Get(key);
    if (v.IsUndefined()) continue;
    if (v.IsNumber()) {
      bag->set(key, v.As<Napi::Number>().DoubleValue());
    } else if (v.IsBoolean()) {
      bag->set(key, v.As<Napi::Boolean>().Value());
    } else if (v.IsString()) {
      bag->set(key, v.As<Napi::String>().Utf8Value());
    } else {
      return false;
    }
  }
  return true;
}

// { provider?, listen?, authSecret?, groups: { [provider]: options } } into *engine.
bool readEngineOptions(const Napi::Object& o, EngineOptions* engine) {
  Napi::Value provider = o.Get("provider");
  if (provider.IsString()) engine->provider = provider.As<Napi::String>().Utf8Value();
  Napi::Value listen = o.Get("listen");
  if (listen.IsString()) engine->listen = listen.As<Napi::String>().Utf8Value();
  // The shared secret as bytes (JS checked its length); it stays in native memory only.
  Napi::Value secret = o.Get("authSecret");
  if (secret.IsBuffer()) {
    auto bytes = secret.As<Napi::Buffer<uint8_t>>();
    engine->authSecret.assign(reinterpret_cast<const char*>(bytes.Data()), bytes.Length());
  } else if (!secret.IsUndefined()) {
    return false;
  }
  Napi::Value groups = o.Get("groups");
  if (groups.IsUndefined()) return true;
  if (!groups.IsObject()) return false;
  Napi::Array names = groups.As<Napi::Object>().GetPropertyNames();
  for (uint32_t i = 0; i < names.Length(); i++) {
    std::string name = names.Get(i).As<Napi::String>().Utf8Value();
    Napi::Value group = groups.As<Napi::Object>().Get(name);
    if (group.IsUndefined()) continue;
    if (!readGroup(group, &engine->groups.try_emplace(name, name).first->second)) return false;
  }
  return true;
}

// An ArrayBuffer over a page of completion or counter words; the view keeps the page alive.
Napi::Value pageView(const Napi::Env& env, std::shared_ptr<rvma::CompletionPage> page) {
  if (!page) return env.Undefined();
  auto* hold = new std::shared_ptr<rvma::CompletionPage>(std::move(page));
  return Napi::ArrayBuffer::New(
      env, (*hold)->data(), rvma::CompletionPage::kBytes,
      [](Napi::Env, void*, std::shared_ptr<rvma::CompletionPage>* held) { delete held; }, hold);
}

// A memory id (see PutRequest::memory) from an optional argument: 0 when absent.
// One N-API call on the put path (it fails, leaving 0, for anything but a number).
uint64_t memoryArg(const Napi::CallbackInfo& info, size_t index) {
  int64_t memory = 0;
  if (info.Length() > index) napi_get_value_int64(info.Env(), info[index], &memory);
  return memory > 0 ? uint64_t(memory) : 0;
}

}  // namespace

// new NativeEndpoint(nodeId, progress: 0 | 1, onEvents(events, words, texts), { provider, listen, authSecret, groups })
EndpointWrap::EndpointWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EndpointWrap>(info) {
  Napi::Env env = info.Env();
  EngineOptions options;
  if (info.Length() < 4 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsFunction() ||
      !info[3].IsObject() || !readEngineOptions(info[3].As<Napi::Object>(), &options)) {
    typeError(env, "NativeEndpoint(nodeId, progress, onEvents, { provider, listen, authSecret, groups })");
    return;
  }
  options.nodeId = info[0].As<Napi::String>().Utf8Value();
  options.progress = info[1].As<Napi::Number>().Int32Value() == 1 ? ProgressMode::Thread : ProgressMode::Loop;
  // The wake-up exists first: in loop mode it is also the poller the engine's fds go to.
  wake_ = startJsWake(env, info[2].As<Napi::Function>(), options.progress == ProgressMode::Loop);
  if (!wake_) {
    typeError(env, "could not register with the event loop");
    return;
  }
  Status status = Status::Ok;
  std::string error;
  try {
    engine_ = Engine::create(options, &status, &error, pollerOf(wake_));
  } catch (const std::bad_alloc&) {
    status = Status::OutOfMemory;
    error = "out of memory creating the endpoint";
  } catch (const std::exception& e) {
    status = Status::InvalidArgument;
    error = e.what();
  }
  if (!engine_) {
    stopJsWake(wake_);
    wake_ = nullptr;
    statusError(env, status, error.c_str());
    return;
  }
  attachJsWake(wake_, engine_);
  JsWake* wake = wake_;
  engine_->setWake([wake] { signalJsWake(wake); });
  // At environment teardown (process exit), stop before Node tears down libuv handles.
  napi_add_env_cleanup_hook(env, onEnvCleanup, this);
  cleanupHook_ = true;
}

EndpointWrap::~EndpointWrap() { shutdown(); }

// One function for add and remove: the hook is identified by (function, argument).
void EndpointWrap::onEnvCleanup(void* self) { static_cast<EndpointWrap*>(self)->shutdown(); }

void EndpointWrap::shutdown() {
  if (engine_) engine_->close();  // after this no thread signals wake_
  inbounds_.clear();
  credits_.clear();
  outbounds_.clear();
  engine_.reset();
  if (wake_) stopJsWake(wake_);
  wake_ = nullptr;
  if (cleanupHook_) {
    napi_remove_env_cleanup_hook(Env(), onEnvCleanup, this);
    cleanupHook_ = false;
  }
}

// openMailbox(vaddr: bigint, epochType: 0|1, threshold: bigint, maxBuffers: number) -> [id, slot] | status
Napi::Value EndpointWrap::OpenMailbox(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  uint64_t vaddr, threshold;
  if (info.Length() < 4 || !toU64(info[0], &vaddr) || !info[1].IsNumber() || !toU64(info[2], &threshold) ||
      !info[3].IsNumber()) {
    return typeError(env, "openMailbox(vaddr, epochType, threshold, maxBuffers)");
  }
  MailboxConfig cfg;
  cfg.epochType = info[1].As<Napi::Number>().Int32Value() == 1 ? EpochType::Ops : EpochType::Bytes;
  cfg.threshold = threshold;
  cfg.maxBuffers = info[3].As<Napi::Number>().Uint32Value();
  if (!readAllow(info[4], &cfg.access) || (info.Length() > 5 && !info[5].IsUndefined() && !info[5].IsBoolean())) {
    return typeError(env, "openMailbox(vaddr, epochType, threshold, maxBuffers, allow?: string[], reportSender?: boolean, recycle?: boolean)");
  }
  cfg.reportSender = info.Length() > 5 && info[5].IsBoolean() && info[5].As<Napi::Boolean>().Value();
  cfg.recycle = info.Length() > 6 && info[6].IsBoolean() && info[6].As<Napi::Boolean>().Value();
  OpenedMailbox opened;
  Status s;
  try {
    s = engine_->table().open(vaddr, cfg, &opened);
  } catch (const std::bad_alloc&) {
    s = Status::OutOfMemory;
  }
  if (!ok(s)) return Napi::Number::New(env, double(s));
  Napi::Array result = Napi::Array::New(env, 2);
  result.Set(0u, Napi::Number::New(env, opened.id));
  result.Set(1u, Napi::Number::New(env, opened.slot));
  return result;
}

// closeMailbox(vaddr) -> 1 released now | 0 release event follows | -status
Napi::Value EndpointWrap::CloseMailbox(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, -double(Status::Closed));
  uint64_t vaddr;
  if (info.Length() < 1 || !toU64(info[0], &vaddr)) return typeError(env, "closeMailbox(vaddr)");
  bool released = false;
  Status s = engine_->table().close(vaddr, &released);
  return Napi::Number::New(env, ok(s) ? (released ? 1 : 0) : -double(s));
}

// setMailboxAccess(vaddr, allow?: string[]) -> status (undefined: every peer)
Napi::Value EndpointWrap::SetMailboxAccess(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  uint64_t vaddr;
  AccessPolicy access;
  if (info.Length() < 1 || !toU64(info[0], &vaddr) || !readAllow(info[1], &access)) {
    return typeError(env, "setMailboxAccess(vaddr, allow?: string[])");
  }
  return Napi::Number::New(env, double(engine_->table().setAccess(vaddr, std::move(access))));
}

// post(vaddr, bytes: ArrayBufferView, threshold: bigint, memory?: number) -> bufferIndex | -status
Napi::Value EndpointWrap::Post(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, -double(Status::Closed));
  uint64_t vaddr, threshold;
  uint8_t* data;
  size_t len;
  if (info.Length() < 3 || !toU64(info[0], &vaddr) || !toBytes(info[1], &data, &len) ||
      !toU64(info[2], &threshold)) {
    return typeError(env, "post(vaddr, bytes, threshold)");
  }
  uint64_t index = 0;
  Status s;
  try {
    s = engine_->table().post(vaddr, data, len, threshold, memoryArg(info, 3), &index);
  } catch (const std::bad_alloc&) {
    s = Status::OutOfMemory;
  }
  return Napi::Number::New(env, ok(s) ? double(index) : -double(s));
}

// incEpoch(vaddr) -> status
Napi::Value EndpointWrap::IncEpoch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  uint64_t vaddr;
  if (info.Length() < 1 || !toU64(info[0], &vaddr)) return typeError(env, "incEpoch(vaddr)");
  return Napi::Number::New(env, double(engine_->table().incEpoch(vaddr)));
}

// put(putId, route, vaddr, data, offset: bigint, flags, memory, head?) -> status. route: an
// index route() gave, which names the peer and its incarnation. flags: put_flags.h (with
// kPutCopy the payload is copied now, and the caller's memory is free at once). memory: names
// the JS memory under data (0: unnamed). head: a gathered put, whose payload is head's bytes
// followed by data's. A putId that names a counter (CounterPutId) is counted there instead of
// reported. Accepted: 0, or kPutRoundDue when the turn's end must flush() (Engine::roundDue).
Napi::Value EndpointWrap::Put(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  uint64_t vaddr, offset;
  uint8_t* data;
  size_t len;
  if (info.Length() < 7 || !info[0].IsNumber() || !info[1].IsNumber() || !toU64(info[2], &vaddr) ||
      !toBytes(info[3], &data, &len) || !toU64(info[4], &offset) || !info[5].IsNumber()) {
    return typeError(env, "put(putId, route, vaddr, data, offset, flags, memory, head?)");
  }
  const uint32_t route = info[1].As<Napi::Number>().Uint32Value();
  if (route >= routes_.size()) return typeError(env, "put: no such route");
  const Destination& to = routes_[route];
  const uint32_t flags = info[5].As<Napi::Number>().Uint32Value();
  PutRequest req = putRequest(uint64_t(info[0].As<Napi::Number>().Int64Value()), to.peer, to.incarnation, vaddr, data,
                              len, offset, flags);
  req.memory = memoryArg(info, 6);
  if (info.Length() > 7 && !info[7].IsUndefined()) {
    uint8_t* head;
    size_t headLen;
    if (!toBytes(info[7], &head, &headLen)) return typeError(env, "put: head must be bytes");
    req.head = head;
    req.headLen = headLen;
    req.len += headLen;
  }
  Status s;
  try {
    if (flags & kPutCopy) copyIfKept(req);
    s = engine_->put(std::move(req));
  } catch (const std::bad_alloc&) {
    s = Status::OutOfMemory;
  }
  if (s == Status::Ok && engine_->roundDue()) return Napi::Number::New(env, kPutRoundDue);
  return Napi::Number::New(env, double(s));
}

// flush(): the puts queued in this turn go out now (loop mode; the worker needs no prompt).
Napi::Value EndpointWrap::Flush(const Napi::CallbackInfo& info) {
  if (engine_) engine_->flush();
  return info.Env().Undefined();
}

// route(peer: string, incarnation?: bigint) -> the index that puts name it by. JS asks once per
// destination and keeps the index.
Napi::Value EndpointWrap::Route(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t incarnation = 0;
  if (info.Length() < 1 || !info[0].IsString() ||
      (info.Length() > 1 && !info[1].IsUndefined() && !toU64(info[1], &incarnation))) {
    return typeError(env, "route(peer, incarnation?)");
  }
  routes_.push_back(Destination{peerName(info[0].As<Napi::String>().Utf8Value()), incarnation});
  return Napi::Number::New(env, double(routes_.size() - 1));
}

// putQueued(entries: Float64Array, count, arena: Uint8Array) -> 0 | status: `count` small puts
// described in entries (kQueuedWords numbers each), their payloads in arena, all copied now and
// sent as one batch. JS fills both in one turn and hands them over once: one native call for
// the batch instead of one per put. A refusal of a counted put is counted (Engine::put), and so
// is a put that could not be handed over for lack of memory (OutOfMemory).
Napi::Value EndpointWrap::PutQueued(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  uint8_t *entryBytes, *arena;
  size_t entryLen, arenaLen;
  if (info.Length() < 3 || !toBytes(info[0], &entryBytes, &entryLen) || !info[1].IsNumber() ||
      !toBytes(info[2], &arena, &arenaLen)) {
    return typeError(env, "putQueued(entries, count, arena)");
  }
  // Entry: putId, route, vaddr high 32 bits, vaddr low 32 bits, offset, flags (put_flags.h;
  // every queued payload is copied here), payload start in arena, payload length.
  constexpr size_t kQueuedWords = 8;
  const double* e = reinterpret_cast<const double*>(entryBytes);
  const size_t count = info[1].As<Napi::Number>().Uint32Value();
  if (count * kQueuedWords * sizeof(double) > entryLen) return typeError(env, "putQueued: count exceeds the entries");
  uint64_t used = 0;  // the arena's bytes the entries use
  for (size_t i = 0; i < count; i++) {
    const double* q = e + i * kQueuedWords;
    const uint64_t route = uint64_t(q[1]), at = uint64_t(q[6]), len = uint64_t(q[7]);
    if (route >= routes_.size() || at > arenaLen || len > arenaLen - at) return typeError(env, "putQueued: a bad entry");
    used = std::max(used, at + len);
  }
  size_t i = 0;  // the entries handed over so far
  try {
    // The payloads, copied once into a block their puts share (JS reuses the arena at once):
    // one allocation per call, not one per put. The block lives until its last put settles.
    std::shared_ptr<uint8_t> block(new uint8_t[std::max<uint64_t>(used, 1)], std::default_delete<uint8_t[]>());
    std::memcpy(block.get(), arena, used);
    for (; i < count; i++) {
      const double* q = e + i * kQueuedWords;
      const uint64_t route = uint64_t(q[1]), at = uint64_t(q[6]), len = uint64_t(q[7]);
      const Destination& d = routes_[route];
      PutRequest req = putRequest(uint64_t(q[0]), d.peer, d.incarnation, (uint64_t(q[2]) << 32) | uint64_t(q[3]),
                                  block.get() + at, len, uint64_t(q[4]), uint32_t(q[5]));
      req.joined = std::shared_ptr<const uint8_t>(block, block.get() + at);
      Status s = engine_->put(std::move(req));
      if (!ok(s)) engine_->putSettled(uint64_t(q[0]), s);  // reported like any outcome
    }
  } catch (const std::bad_alloc&) {
    // The puts not handed over fail, each reported like any outcome.
    for (; i < count; i++) engine_->putSettled(uint64_t(e[i * kQueuedWords]), Status::OutOfMemory);
  }
  engine_->flush();
  return Napi::Number::New(env, 0);
}

// createPutCounter() -> slot | -status
Napi::Value EndpointWrap::CreatePutCounter(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, -double(Status::Closed));
  uint32_t slot;
  if (!engine_->counters().allocate(&slot)) return Napi::Number::New(env, -double(Status::InvalidArgument));
  return Napi::Number::New(env, slot);
}

// putCounterPage(index) -> ArrayBuffer over that page of counter words (kept alive by the view)
Napi::Value EndpointWrap::PutCounterPage(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_ || info.Length() < 1 || !info[0].IsNumber()) return env.Undefined();
  return pageView(env, engine_->counters().page(info[0].As<Napi::Number>().Uint32Value()));
}

// armPutCounter(slot, level) -> true when the counter already settled `level` puts; otherwise
// a CounterReached event follows once it has.
Napi::Value EndpointWrap::ArmPutCounter(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Boolean::New(env, true);
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber()) return typeError(env, "armPutCounter(slot, level)");
  uint32_t slot = info[0].As<Napi::Number>().Uint32Value();
  uint64_t level = uint64_t(info[1].As<Napi::Number>().DoubleValue());
  return Napi::Boolean::New(env, engine_->counters().arm(slot, level));
}

// releasePutCounter(slot): no put can bump it any more.
Napi::Value EndpointWrap::ReleasePutCounter(const Napi::CallbackInfo& info) {
  if (engine_ && info.Length() > 0 && info[0].IsNumber()) engine_->counters().release(info[0].As<Napi::Number>().Uint32Value());
  return info.Env().Undefined();
}

// skipCountedPut(slot, index): a put that never reached the native side settled in JS.
Napi::Value EndpointWrap::SkipCountedPut(const Napi::CallbackInfo& info) {
  if (engine_ && info.Length() > 1 && info[0].IsNumber() && info[1].IsNumber()) {
    engine_->counters().skip(info[0].As<Napi::Number>().Uint32Value(), uint32_t(info[1].As<Napi::Number>().Int64Value()));
  }
  return info.Env().Undefined();
}

// connect(requestId: number, address: string) -> status (a Connected event follows on 0)
Napi::Value EndpointWrap::Connect(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsString()) return typeError(env, "connect(requestId, address)");
  return Napi::Number::New(env, double(engine_->connect(uint64_t(info[0].As<Napi::Number>().Int64Value()),
                                                          info[1].As<Napi::String>().Utf8Value())));
}

Napi::Value EndpointWrap::Incarnation(const Napi::CallbackInfo& info) {
  return Napi::BigInt::New(info.Env(), engine_ ? engine_->incarnation() : uint64_t(0));
}

// listenAddresses() -> { [provider]: address } for the providers it runs ('' where one accepts no peers)
Napi::Value EndpointWrap::ListenAddresses(const Napi::CallbackInfo& info) {
  Napi::Object out = Napi::Object::New(info.Env());
  if (engine_) {
    for (const auto& [provider, address] : engine_->listenAddresses()) out.Set(provider, address);
  }
  return out;
}

// peers() -> [nodeId, provider, detail][] for the peers the providers are connected to
Napi::Value EndpointWrap::Peers(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env);
  if (!engine_) return out;
  uint32_t i = 0;
  for (const PeerInfo& p : engine_->peers()) {
    Napi::Array row = Napi::Array::New(env, 3);
    row.Set(0u, p.node);
    row.Set(1u, p.provider);
    row.Set(2u, p.detail);
    out.Set(i++, row);
  }
  return out;
}

// fallback() -> why provider 'auto' runs another provider in place of the one listen named, or ''
Napi::Value EndpointWrap::Fallback(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), engine_ ? engine_->fallback() : std::string());
}

// forgetMemory(memory: number): that memory was collected.
Napi::Value EndpointWrap::ForgetMemory(const Napi::CallbackInfo& info) {
  if (engine_) engine_->forgetMemory(memoryArg(info, 0));
  return info.Env().Undefined();
}

// registrationStats() -> [registered, reused, evicted, cachedBytes] | undefined (no verbs)
Napi::Value EndpointWrap::RegistrationStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t stats[4];
  if (!engine_ || !engine_->registrationStats(stats)) return env.Undefined();
  Napi::Array out = Napi::Array::New(env, 4);
  for (uint32_t i = 0; i < 4; i++) out.Set(i, Napi::Number::New(env, double(stats[i])));
  return out;
}

// registerRegion(bytes, allow?: string[]) -> [key: bigint, regionId: number]
Napi::Value EndpointWrap::RegisterRegion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  uint8_t* data;
  size_t len;
  AccessPolicy access;
  if (info.Length() < 1 || !toBytes(info[0], &data, &len) || !readAllow(info[1], &access)) {
    return typeError(env, "registerRegion(bytes, allow?: string[])");
  }
  uint64_t key;
  uint32_t id;
  engine_->regions().add(data, len, std::move(access), &key, &id);
  Napi::Array result = Napi::Array::New(env, 2);
  result.Set(0u, Napi::BigInt::New(env, key));
  result.Set(1u, Napi::Number::New(env, id));
  return result;
}

// deregisterRegion(key) -> 1 released now | 0 release event follows | -status
Napi::Value EndpointWrap::DeregisterRegion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, -double(Status::Closed));
  uint64_t key;
  if (info.Length() < 1 || !toU64(info[0], &key)) return typeError(env, "deregisterRegion(key)");
  bool released = false;
  Status s = engine_->deregisterRegion(key, &released);
  return Napi::Number::New(env, ok(s) ? (released ? 1 : 0) : -double(s));
}

// completionPage(index) -> ArrayBuffer over that page of completion words (kept alive by the view)
Napi::Value EndpointWrap::CompletionPage(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) return typeError(env, "completionPage(index)");
  return pageView(env, engine_->table().completionPage(info[0].As<Napi::Number>().Uint32Value()));
}

// wakeupCounts() -> [the event loop's wake-ups this endpoint caused, the progress thread's].
Napi::Value EndpointWrap::WakeupCounts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(uint32_t(0), Napi::Number::New(env, wake_ ? double(jsWakeups(wake_)) : 0));
  out.Set(uint32_t(1), Napi::Number::New(env, engine_ ? double(engine_->progressWakeups()) : 0));
  return out;
}

Napi::Value EndpointWrap::OpenCount(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), engine_ ? double(engine_->table().openCount()) : 0);
}

Napi::Value EndpointWrap::Ref(const Napi::CallbackInfo& info) {
  if (wake_) refJsWake(wake_, true);
  return info.Env().Undefined();
}

Napi::Value EndpointWrap::Unref(const Napi::CallbackInfo& info) {
  if (wake_) refJsWake(wake_, false);
  return info.Env().Undefined();
}

Napi::Value EndpointWrap::Close(const Napi::CallbackInfo& info) {
  shutdown();
  return info.Env().Undefined();
}

}  // namespace rvma::addon
