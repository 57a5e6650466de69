// JS handle of an Engine. Bindings only: converts arguments, calls the engine, converts back.
// Status codes are returned as numbers (negative where a result would otherwise be a count);
// the TS layer turns them into RvmaError.
#pragma once
#include <napi.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "../engine.h"
#include "../ring/ring_credits.h"
#include "../ring/ring_inbound.h"
#include "../ring/ring_outbound.h"
#include "js_wake.h"

namespace rvma::addon {

class EndpointWrap : public Napi::ObjectWrap<EndpointWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit EndpointWrap(const Napi::CallbackInfo& info);
  ~EndpointWrap() override;

 private:
  Napi::Value OpenMailbox(const Napi::CallbackInfo& info);
  Napi::Value CloseMailbox(const Napi::CallbackInfo& info);
  Napi::Value SetMailboxAccess(const Napi::CallbackInfo& info);
  Napi::Value Post(const Napi::CallbackInfo& info);
  Napi::Value IncEpoch(const Napi::CallbackInfo& info);
  Napi::Value Put(const Napi::CallbackInfo& info);
  Napi::Value Flush(const Napi::CallbackInfo& info);
  Napi::Value Route(const Napi::CallbackInfo& info);
  Napi::Value PutQueued(const Napi::CallbackInfo& info);
  Napi::Value CreatePutCounter(const Napi::CallbackInfo& info);
  Napi::Value PutCounterPage(const Napi::CallbackInfo& info);
  Napi::Value ArmPutCounter(const Napi::CallbackInfo& info);
  Napi::Value ReleasePutCounter(const Napi::CallbackInfo& info);
  Napi::Value SkipCountedPut(const Napi::CallbackInfo& info);
  Napi::Value Connect(const Napi::CallbackInfo& info);
  Napi::Value ForgetMemory(const Napi::CallbackInfo& info);
  Napi::Value RegistrationStats(const Napi::CallbackInfo& info);
  Napi::Value RegisterRegion(const Napi::CallbackInfo& info);
  Napi::Value DeregisterRegion(const Napi::CallbackInfo& info);
  Napi::Value ListenAddresses(const Napi::CallbackInfo& info);
  Napi::Value Peers(const Napi::CallbackInfo& info);
  Napi::Value Fallback(const Napi::CallbackInfo& info);
  Napi::Value Incarnation(const Napi::CallbackInfo& info);
  Napi::Value CompletionPage(const Napi::CallbackInfo& info);
  Napi::Value OpenCount(const Napi::CallbackInfo& info);
  Napi::Value WakeupCounts(const Napi::CallbackInfo& info);
  Napi::Value Ref(const Napi::CallbackInfo& info);
  Napi::Value Unref(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  // endpoint_ring.cpp
  Napi::Value RingOpen(const Napi::CallbackInfo& info);
  Napi::Value RingTarget(const Napi::CallbackInfo& info);
  Napi::Value RingRelease(const Napi::CallbackInfo& info);
  Napi::Value RingGrant(const Napi::CallbackInfo& info);
  Napi::Value RingCreditsOpen(const Napi::CallbackInfo& info);
  Napi::Value RingCreditsExpect(const Napi::CallbackInfo& info);
  Napi::Value RingClose(const Napi::CallbackInfo& info);
  Napi::Value RingOutOpen(const Napi::CallbackInfo& info);
  Napi::Value RingSend(const Napi::CallbackInfo& info);
  Napi::Value RingTake(const Napi::CallbackInfo& info);
  Napi::Value RingOutClose(const Napi::CallbackInfo& info);
  void shutdown();
  static void onEnvCleanup(void* self);

  std::shared_ptr<Engine> engine_;
  // Destinations named by index in queued puts (see PutQueued): a node id or address, and the
  // incarnation it must be (0: any).
  struct Destination {
    PeerName peer;
    uint64_t incarnation;
  };
  std::vector<Destination> routes_;
  // A ring's receiving sides and credits, by their mailbox's id (endpoint_ring.cpp).
  std::unordered_map<uint32_t, std::shared_ptr<ring::RingInbound>> inbounds_;
  std::unordered_map<uint32_t, std::shared_ptr<ring::RingCredits>> credits_;
  // A ring's sending sides, by the id ringOutOpen gave, with where their frames go.
  struct RingSender {
    ring::RingOutbound outbound;
    PeerName peer;
    uint64_t incarnation;
    uint64_t vaddr;
  };
  std::unordered_map<uint32_t, RingSender> outbounds_;
  uint32_t nextOutbound_ = 0;
  std::vector<uint8_t> frameHead_;  // a frame's ring header and the sender's header, while it is handed over
  class JsWake* wake_ = nullptr;
  bool cleanupHook_ = false;
};

}  // namespace rvma::addon
