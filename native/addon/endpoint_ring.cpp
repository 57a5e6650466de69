// EndpointWrap's ring bindings: a ring direction's receiving side in native code (ring/).
#include <unordered_map>

#include "../ring/ring_inbound.h"
#include "convert.h"
#include "endpoint_wrap.h"

namespace rvma::addon {

// ringOpen(mailboxId, vaddr, slab, slots, frameBytes, stride, wordsBytes) -> status. The mailbox
// (opened by JS) hands its completions to a RingInbound from now on, whose buffers lie in
// `slab` (JS keeps it alive until the mailbox is released); Notify events carry mailboxId.
Napi::Value EndpointWrap::RingOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  uint64_t vaddr;
  uint8_t* slab;
  size_t len;
  if (info.Length() < 7 || !info[0].IsNumber() || !toU64(info[1], &vaddr) || !toBytes(info[2], &slab, &len) ||
      !info[3].IsNumber() || !info[4].IsNumber() || !info[5].IsNumber() || !info[6].IsNumber()) {
    return typeError(env, "ringOpen(mailboxId, vaddr, slab, slots, frameBytes, stride, wordsBytes)");
  }
  const uint32_t id = info[0].As<Napi::Number>().Uint32Value();
  ring::SlabLayout layout{info[3].As<Napi::Number>().Uint32Value(), uint64_t(info[4].As<Napi::Number>().Int64Value()),
                          uint64_t(info[5].As<Napi::Number>().Int64Value()), uint64_t(info[6].As<Napi::Number>().Int64Value())};
  if (!layout.fits(len) || reinterpret_cast<uintptr_t>(slab) % 8 != 0 || rings_.count(id)) {
    return Napi::Number::New(env, double(Status::InvalidArgument));
  }
  std::weak_ptr<Engine> weak = engine_;
  auto inbound = std::make_shared<ring::RingInbound>(vaddr, slab, 0, layout, [weak, id](const std::string& text) {
    if (auto e = weak.lock()) e->notify(id, text);
  });
  engine_->claim(id, inbound);
  Status s = inbound->start(engine_->table());
  if (!ok(s)) {
    engine_->unclaim(id);
    return Napi::Number::New(env, double(s));
  }
  rings_.emplace(id, std::move(inbound));
  return Napi::Number::New(env, 0);
}

// ringRelease(mailboxId, slot) -> the credits the sender may have in all | -status
Napi::Value EndpointWrap::RingRelease(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, -double(Status::Closed));
  auto it = rings_.find(info[0].As<Napi::Number>().Uint32Value());
  if (it == rings_.end()) return Napi::Number::New(env, -double(Status::NoMailbox));
  uint64_t granted = 0;
  Status s = it->second->release(engine_->table(), info[1].As<Napi::Number>().Uint32Value(), &granted);
  return Napi::Number::New(env, ok(s) ? double(granted) : -double(s));
}

// ringClose(mailboxId): after the mailbox closed, its completions are no longer claimed.
Napi::Value EndpointWrap::RingClose(const Napi::CallbackInfo& info) {
  const uint32_t id = info[0].As<Napi::Number>().Uint32Value();
  if (engine_) engine_->unclaim(id);
  rings_.erase(id);
  return info.Env().Undefined();
}

}  // namespace rvma::addon
