// In-process transport (UCX's "self"): a put is placed into the target endpoint's mailbox
// table through the same reserve/write/commit path that network providers use on arrival.
#pragma once
#include "../provider.h"

namespace rvma {

class LoopbackProvider final : public Provider {
 public:
  explicit LoopbackProvider(ProviderContext ctx) : ctx_(std::move(ctx)) {}
  const char* name() const override { return "loopback"; }
  bool reaches(const std::string& peer) override;
  void put(const PutRequest& req) override;
  bool gathers(const PutRequest&) const override { return true; }
  void close() override {}

 private:
  ProviderContext ctx_;
};

}  // namespace rvma
