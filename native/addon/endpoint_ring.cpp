// EndpointWrap's ring bindings: a ring's receiving sides and its credits in native code (ring/).
// Each claims a mailbox JS opened; Notify events carry that mailbox's id.
#include <unordered_map>

#include "../ring/ring_credit.h"
#include "../ring/ring_credits.h"
#include "../ring/ring_inbound.h"
#include "convert.h"
#include "endpoint_wrap.h"

namespace rvma::addon {
namespace {
uint32_t u32Arg(const Napi::CallbackInfo& info, size_t i) { return info[i].As<Napi::Number>().Uint32Value(); }
uint64_t u64Arg(const Napi::CallbackInfo& info, size_t i) { return uint64_t(info[i].As<Napi::Number>().Int64Value()); }

// Claims the mailbox's completions for `claim`, which then posts its buffers; kept in `into` by
// the mailbox's id once that worked. The status, as a JS number.
template <typename Claim>
Napi::Value claimAndStart(Napi::Env env, Engine& engine, uint32_t id, std::shared_ptr<Claim> claim,
                          std::unordered_map<uint32_t, std::shared_ptr<Claim>>& into) {
  engine.claim(id, claim);
  Status s = claim->start(engine.table());
  if (ok(s)) into.emplace(id, std::move(claim));
  else engine.unclaim(id);
  return Napi::Number::New(env, double(s));
}
}  // namespace

// ringOpen(mailboxId, vaddr, slab, slots, frameBytes, stride, wordsBytes) -> status. The mailbox
// hands its completions to a RingInbound from now on, whose buffers and words lie in `slab`
// (JS keeps it alive until the mailbox is released).
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
  const uint32_t id = u32Arg(info, 0);
  ring::SlabLayout layout{u32Arg(info, 3), u64Arg(info, 4), u64Arg(info, 5), u64Arg(info, 6)};
  if (!layout.fits(len) || layout.frameBytes > UINT32_MAX || reinterpret_cast<uintptr_t>(slab) % 8 != 0 ||
      inbounds_.count(id)) {
    return Napi::Number::New(env, double(Status::InvalidArgument));
  }
  std::weak_ptr<Engine> weak = engine_;
  auto inbound = std::make_shared<ring::RingInbound>(vaddr, slab, layout, [weak, id](const std::string& why) {
    if (auto e = weak.lock()) e->notify(id, why);
  });
  return claimAndStart(env, *engine_, id, std::move(inbound), inbounds_);
}

// ringTarget(mailboxId, peer, incarnation: bigint, creditsVaddr: bigint, dir, frameBytes, base:
// bigint): the sender of this direction is `peer` (only that incarnation); its credits go to its
// credits mailbox as records of direction `dir` naming this member's ring mailboxes (`base`),
// the first of them now.
Napi::Value EndpointWrap::RingTarget(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t incarnation, vaddr, base;
  if (info.Length() < 7 || !info[1].IsString() || !toU64(info[2], &incarnation) || !toU64(info[3], &vaddr) ||
      !toU64(info[6], &base)) {
    return typeError(env, "ringTarget(mailboxId, peer, incarnation, creditsVaddr, dir, frameBytes, base)");
  }
  auto it = inbounds_.find(u32Arg(info, 0));
  if (!engine_ || it == inbounds_.end()) return env.Undefined();
  PeerName peer = peerName(info[1].As<Napi::String>().Utf8Value());
  const ring::Credit shape{u32Arg(info, 4) == 0 ? ring::Dir::Next : ring::Dir::Prev, u32Arg(info, 5), 0, base};
  std::weak_ptr<Engine> weak = engine_;
  it->second->target([weak, peer, incarnation, vaddr, shape](uint64_t total) {
    auto engine = weak.lock();
    if (!engine) return;
    ring::Credit credit = shape;
    credit.total = total;
    uint8_t record[ring::kCreditBytes];
    ring::encodeCredit(record, credit);
    PutRequest req{engine->unreportedPutId(), peer, vaddr, record, ring::kCreditBytes, Placement{true, 0}};
    req.incarnation = incarnation;
    req.ack = AckPace::Late;  // nobody waits for it: it must not wake the neighbour
    req.own();
    engine->put(std::move(req));
  });
  return env.Undefined();
}

// ringRelease(mailboxId, slot) -> status: the frame in buffer `slot` was released.
Napi::Value EndpointWrap::RingRelease(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  auto it = inbounds_.find(u32Arg(info, 0));
  if (it == inbounds_.end()) return Napi::Number::New(env, double(Status::NoMailbox));
  return Napi::Number::New(env, double(it->second->release(engine_->table(), u32Arg(info, 1))));
}

// ringGrant(mailboxId, again?: boolean): a credit that came due on an arrival goes now; with
// `again`, the credits granted so far go again.
Napi::Value EndpointWrap::RingGrant(const Napi::CallbackInfo& info) {
  auto it = inbounds_.find(u32Arg(info, 0));
  const bool again = info.Length() > 1 && info[1].IsBoolean() && info[1].As<Napi::Boolean>().Value();
  if (engine_ && it != inbounds_.end()) it->second->sendDue(again);
  return info.Env().Undefined();
}

// ringCreditsOpen(mailboxId, vaddr, block) -> status: the mailbox (opened with recycle) takes
// credit records into `block` (ring_credits.h, CreditsLayout), where JS reads the totals.
Napi::Value EndpointWrap::RingCreditsOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  uint64_t vaddr;
  uint8_t* block;
  size_t len;
  if (info.Length() < 3 || !info[0].IsNumber() || !toU64(info[1], &vaddr) || !toBytes(info[2], &block, &len)) {
    return typeError(env, "ringCreditsOpen(mailboxId, vaddr, block)");
  }
  const uint32_t id = u32Arg(info, 0);
  if (len < ring::CreditsLayout::kBytes || reinterpret_cast<uintptr_t>(block) % 8 != 0 || credits_.count(id)) {
    return Napi::Number::New(env, double(Status::InvalidArgument));
  }
  std::weak_ptr<Engine> weak = engine_;
  auto credits = std::make_shared<ring::RingCredits>(vaddr, block, [weak, id] {
    if (auto e = weak.lock()) e->notify(id);
  });
  return claimAndStart(env, *engine_, id, std::move(credits), credits_);
}

// ringCreditsExpect(mailboxId, dir, node, base: bigint): credits for direction `dir` count only
// from `node`'s instance whose ring mailboxes are at `base`.
Napi::Value EndpointWrap::RingCreditsExpect(const Napi::CallbackInfo& info) {
  auto it = credits_.find(u32Arg(info, 0));
  uint64_t base;
  if (it != credits_.end() && info.Length() > 3 && info[2].IsString() && toU64(info[3], &base)) {
    it->second->expect(u32Arg(info, 1) == 0 ? ring::Dir::Next : ring::Dir::Prev, info[2].As<Napi::String>().Utf8Value(), base);
  }
  return info.Env().Undefined();
}

// ringClose(mailboxId): after the mailbox closed, its completions are no longer claimed.
Napi::Value EndpointWrap::RingClose(const Napi::CallbackInfo& info) {
  const uint32_t id = u32Arg(info, 0);
  if (engine_) engine_->unclaim(id);
  inbounds_.erase(id);
  credits_.erase(id);
  return info.Env().Undefined();
}

}  // namespace rvma::addon
