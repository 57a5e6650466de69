// EndpointWrap's ring bindings: a ring's receiving sides, its credits and its sending sides in
// native code (ring/). The receiving sides and the credits each claim a mailbox JS opened;
// Notify events carry that mailbox's id.
#include <cstring>
#include <new>
#include <unordered_map>

#include "../ring/ring_credit.h"
#include "../ring/ring_credits.h"
#include "../ring/ring_inbound.h"
#include "convert.h"
#include "endpoint_wrap.h"
#include "put_copy.h"

namespace rvma::addon {
namespace {
uint32_t u32Arg(const Napi::CallbackInfo& info, size_t i) { return info[i].As<Napi::Number>().Uint32Value(); }
uint64_t u64Arg(const Napi::CallbackInfo& info, size_t i) { return uint64_t(info[i].As<Napi::Number>().Int64Value()); }

// ringSend's and ringTake's answer when the neighbour has no free buffer: nothing was taken.
constexpr double kRingNoCredit = -2;

// Their answer when take() gave no number.
double refused(ring::RingOutbound::Take take) {
  return take == ring::RingOutbound::Take::NoCredit ? kRingNoCredit : double(Status::TooLarge);
}

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

// ringOutOpen(creditsMailboxId, dir, peer, incarnation: bigint, vaddr: bigint) -> id | -status:
// the sending side of direction `dir` (0: to next, 1: to prev), whose frames go to `peer`'s
// frame mailbox at `vaddr` (only that incarnation) within the credits the credits mailbox takes.
Napi::Value EndpointWrap::RingOutOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t incarnation, vaddr;
  if (info.Length() < 5 || !info[0].IsNumber() || !info[1].IsNumber() || !info[2].IsString() ||
      !toU64(info[3], &incarnation) || !toU64(info[4], &vaddr)) {
    return typeError(env, "ringOutOpen(creditsMailboxId, dir, peer, incarnation, vaddr)");
  }
  if (!engine_) return Napi::Number::New(env, -double(Status::Closed));
  auto credits = credits_.find(u32Arg(info, 0));
  if (credits == credits_.end()) return Napi::Number::New(env, -double(Status::NoMailbox));
  const ring::Dir dir = u32Arg(info, 1) == 0 ? ring::Dir::Next : ring::Dir::Prev;
  const uint32_t id = nextOutbound_++;
  outbounds_.emplace(id, RingSender{ring::RingOutbound(credits->second, dir), peerName(info[2].As<Napi::String>().Utf8Value()),
                                    incarnation, vaddr});
  return Napi::Number::New(env, id);
}

// ringSend(outId, putId, data, header?) -> 0 | kPutRoundDue | kRingNoCredit | status: the next
// frame, numbered, within the credits, as one counted put (putId names its counter) that is
// copied now (data and header are free once this returns) and acknowledged late: the
// neighbour's credits pace the sender, so nothing waits for the answer.
Napi::Value EndpointWrap::RingSend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint8_t *data, *header = nullptr;
  size_t len, headerLen = 0;
  if (info.Length() < 3 || !info[0].IsNumber() || !info[1].IsNumber() || !toBytes(info[2], &data, &len) ||
      (info.Length() > 3 && !info[3].IsUndefined() && !toBytes(info[3], &header, &headerLen))) {
    return typeError(env, "ringSend(outId, putId, data, header?)");
  }
  if (!engine_) return Napi::Number::New(env, double(Status::Closed));
  auto it = outbounds_.find(u32Arg(info, 0));
  if (it == outbounds_.end() || headerLen > UINT32_MAX) return Napi::Number::New(env, double(Status::InvalidArgument));
  RingSender& to = it->second;
  frameHead_.resize(ring::kFrameHeaderBytes + headerLen);
  const auto take = to.outbound.take(headerLen + len, uint32_t(headerLen), frameHead_.data());
  if (take != ring::RingOutbound::Take::Ok) return Napi::Number::New(env, refused(take));
  if (headerLen) std::memcpy(frameHead_.data() + ring::kFrameHeaderBytes, header, headerLen);
  const uint64_t putId = uint64_t(info[1].As<Napi::Number>().Int64Value());
  PutRequest req{putId, to.peer, to.vaddr, data, len, Placement{true, 0}};
  req.incarnation = to.incarnation;
  req.head = frameHead_.data();
  req.headLen = frameHead_.size();
  req.len += req.headLen;
  req.ack = AckPace::Late;
  copyIfKept(req);
  // A counted put: a refusal is counted there, never returned. So is a frame that could not be
  // handed over for lack of memory: its number is taken, so its loss must end the generation
  // as any lost frame does.
  Status s = Status::Ok;
  try {
    s = engine_->put(std::move(req));
  } catch (const std::bad_alloc&) {
    engine_->putSettled(putId, Status::OutOfMemory);
  }
  if (!ok(s)) return Napi::Number::New(env, double(s));  // the endpoint is closing
  return Napi::Number::New(env, engine_->roundDue() ? kPutRoundDue : 0);
}

// ringTake(outId, bytes, headerLen, head: Uint8Array) -> 0 | kRingNoCredit | status: a sequence
// number for a frame JS puts itself (one not copied), its 16-byte ring header written to head.
Napi::Value EndpointWrap::RingTake(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint8_t* head;
  size_t headLen;
  if (info.Length() < 4 || !info[0].IsNumber() || !info[1].IsNumber() || !info[2].IsNumber() ||
      !toBytes(info[3], &head, &headLen) || headLen < ring::kFrameHeaderBytes) {
    return typeError(env, "ringTake(outId, bytes, headerLen, head)");
  }
  auto it = outbounds_.find(u32Arg(info, 0));
  if (it == outbounds_.end()) return Napi::Number::New(env, double(Status::InvalidArgument));
  const auto take = it->second.outbound.take(u64Arg(info, 1), u32Arg(info, 2), head);
  return Napi::Number::New(env, take == ring::RingOutbound::Take::Ok ? 0 : refused(take));
}

// ringOutClose(outId): the sending side is gone (what it sent still settles through its counter).
Napi::Value EndpointWrap::RingOutClose(const Napi::CallbackInfo& info) {
  if (info.Length() > 0 && info[0].IsNumber()) outbounds_.erase(u32Arg(info, 0));
  return info.Env().Undefined();
}

}  // namespace rvma::addon
