// The lane provider as the engine sees it: no address, no wire, run only when named.
#include "../../../native/providers/provider_kind.h"
#include "lane_provider.h"

namespace rvma {
namespace {

class LaneKind final : public ProviderKind {
 public:
  const char* name() const override { return "lane"; }
  bool runsInAuto(const ProviderSetup&) const override { return false; }
  std::unique_ptr<Provider> open(const ProviderContext& ctx, const ProviderSetup& setup, Status* status,
                                 std::string* error) const override {
    *status = Status::InvalidArgument;
    if (!setup.group.allRead(error)) return nullptr;
    return std::make_unique<LaneProvider>(ctx);
  }
};

}  // namespace

const ProviderKind& laneKind() {
  static const LaneKind kind;
  return kind;
}

}  // namespace rvma
