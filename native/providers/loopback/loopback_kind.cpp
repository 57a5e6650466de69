// The loopback provider as the engine sees it: no options, no address, no wire.
#include "../provider_kind.h"
#include "loopback_provider.h"

namespace rvma {
namespace {

class LoopbackKind final : public ProviderKind {
 public:
  const char* name() const override { return "loopback"; }
  std::unique_ptr<Provider> open(const ProviderContext& ctx, const ProviderSetup& setup, Status* status,
                                 std::string* error) const override {
    *status = Status::InvalidArgument;
    if (!setup.group.allRead(error)) return nullptr;
    return std::make_unique<LoopbackProvider>(ctx, setup.incarnation);
  }
};

}  // namespace

const ProviderKind& loopbackKind() {
  static const LoopbackKind kind;
  return kind;
}

}  // namespace rvma
