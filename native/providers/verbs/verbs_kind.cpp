// The verbs provider as the engine sees it: "rdma://" addresses, its options, its wire version,
// the RDMA devices present, and tcp in its place where it cannot run.
#include "../provider_kind.h"
#include "verbs_options.h"
#include "verbs_wire.h"
#ifdef RVMA_HAVE_VERBS
#include "verbs_devices.h"
#include "verbs_provider.h"
#endif

namespace rvma {
namespace {

bool readVerbsOptions(const OptionBag& o, VerbsOptions* verbs, std::string* error) {
  return o.number("slots", &verbs->slots, error) && o.number("slotBytes", &verbs->slotBytes, error) &&
         o.number("receiveDepth", &verbs->receiveDepth, error) && o.number("maxPutBytes", &verbs->maxPutBytes, error) &&
         o.number("keepaliveMs", &verbs->keepaliveMs, error) && o.number("peerTimeoutMs", &verbs->peerTimeoutMs, error) &&
         o.number("connectTimeoutMs", &verbs->connectTimeoutMs, error) &&
         o.number("registrationCacheBytes", &verbs->registrationCacheBytes, error) &&
         o.number("busyPollUs", &verbs->busyPollUs, error) && o.allRead(error);
}

class VerbsKind final : public ProviderKind {
 public:
  const char* name() const override { return "verbs"; }
  const char* scheme() const override { return "rdma://"; }
  // Only when asked for, by name or by an rdma:// listen address: opening a device costs
  // memory and fails without one.
  bool runsInAuto(const ProviderSetup& setup) const override { return !setup.listen.empty(); }
  const char* fallback() const override { return "tcp"; }
  uint32_t protocolVersion() const override { return verbs::kVersion; }
#ifdef RVMA_HAVE_VERBS
  void describe(CapabilityFacts* facts) const override {
    facts->add("rdmaCore", "true");
    facts->add("devices", rdmaDevicesJson());
  }
#else
  bool built() const override { return false; }
  void describe(CapabilityFacts* facts) const override {
    facts->add("rdmaCore", "false");
    facts->add("devices", "[]");
  }
#endif

  std::unique_ptr<Provider> open(const ProviderContext& ctx, const ProviderSetup& setup, Status* status,
                                 std::string* error) const override {
    VerbsOptions options;
    options.listen = setup.listen;
    *status = Status::InvalidArgument;
    if (!readVerbsOptions(setup.group, &options, error)) return nullptr;
#ifdef RVMA_HAVE_VERBS
    auto verbs = std::make_unique<VerbsProvider>(ctx, std::move(options), setup.incarnation);
    if (!verbs->open(error, status)) return nullptr;
    return verbs;
#else
    *error = "this build of rvma has no verbs provider: rdma-core (libibverbs-dev, librdmacm-dev) was not found "
             "when it was built";
    return nullptr;
#endif
  }
};

}  // namespace

const ProviderKind& verbsKind() {
  static const VerbsKind kind;
  return kind;
}

}  // namespace rvma
