// In-process transport (UCX's "self"): a put is placed into the target endpoint's mailbox
// table through the same reserve/write/commit path that network providers use on arrival.
// With auth, the two endpoints run the same challenge-response as network peers, once per
// incarnation of the target, before the first put is placed.
#pragma once
#include <unordered_map>

#include "../provider.h"

namespace rvma {

class LoopbackProvider final : public Provider {
 public:
  LoopbackProvider(ProviderContext ctx, uint64_t incarnation) : ctx_(std::move(ctx)), incarnation_(incarnation) {}
  const char* name() const override { return "loopback"; }
  bool reaches(const std::string& peer) override;
  void put(PutRequest req) override;
  bool gathers(const PutRequest&) const override { return true; }
  // The bytes are placed during put(), never held past it: a copy:true put is copied once, into
  // the target's buffer.
  bool keepsOnDemand() const override { return true; }
  void close() override {}

 private:
  // "" when this endpoint and the target authenticate each other, else why not.
  std::string authenticate(const std::string& peer, uint64_t incarnation, const auth::PeerAuth* theirs);

  ProviderContext ctx_;
  uint64_t incarnation_;
  std::unordered_map<std::string, uint64_t> authenticated_;  // node id -> the incarnation that proved itself
};

}  // namespace rvma
