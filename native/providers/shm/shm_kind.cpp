// The shm provider as the engine sees it: "shm://" names, its options, its wire version, and
// whether this process may pull with cross-memory reads.
#include <unistd.h>

#include "../provider_kind.h"
#include "shm_channel.h"
#include "shm_layout.h"
#include "shm_provider.h"

namespace rvma {
namespace {

bool readSenderWrites(const OptionBag& o, SenderWrites* out, std::string* error) {
  std::string mode;
  if (!o.text("senderWrites", &mode, error)) return false;
  if (mode.empty()) return true;
  if (mode == "never") *out = SenderWrites::Never;
  else if (mode == "streaming") *out = SenderWrites::Streaming;
  else if (mode == "always") *out = SenderWrites::Always;
  else *error = "shm.senderWrites must be 'never', 'streaming' or 'always', got \"" + mode + "\"";
  return error->empty();
}

bool readShmOptions(const OptionBag& o, ShmOptions* shm, std::string* error) {
  return o.flag("cma", &shm->cma, error) && readSenderWrites(o, &shm->senderWrites, error) &&
         o.number("senderWritesMinBytes", &shm->senderWritesMinBytes, error) && o.number("ringBytes", &shm->ringBytes, error) &&
         o.number("eagerMaxBytes", &shm->eagerMaxBytes, error) && o.number("maxPutBytes", &shm->maxPutBytes, error) &&
         o.number("connectTimeoutMs", &shm->connectTimeoutMs, error) &&
         o.number("busyPollUs", &shm->busyPollUs, error) && o.allRead(error);
}

// Whether this process may use cross-memory reads at all (a seccomp filter, as container
// runtimes install by default, refuses them outright). A peer may still refuse them: another
// user, or ptrace restrictions; each connection probes its peer again.
bool crossMemoryPermitted() {
  uint64_t probe = 0x5eed, copy = 0;
  return shm::pull(getpid(), reinterpret_cast<uint8_t*>(&copy), reinterpret_cast<uint64_t>(&probe), sizeof probe) ==
             shm::Pull::Ok &&
         copy == probe;
}

class ShmKind final : public ProviderKind {
 public:
  const char* name() const override { return "shm"; }
  const char* scheme() const override { return "shm://"; }
  // The group is given exactly when shm is enabled.
  bool runsInAuto(const ProviderSetup& setup) const override { return setup.group.given(); }
  uint32_t protocolVersion() const override { return shm::kVersion; }
  void describe(CapabilityFacts* facts) const override { facts->add("cma", crossMemoryPermitted() ? "true" : "false"); }
  std::unique_ptr<Provider> open(const ProviderContext& ctx, const ProviderSetup& setup, Status* status,
                                 std::string* error) const override {
    ShmOptions options;
    *status = Status::InvalidArgument;
    if (!readShmOptions(setup.group, &options, error)) return nullptr;
    if (!setup.listen.empty() && !parseShmAddress(setup.listen, &options.name)) {
      *error = "an shm name is 1..100 characters of [A-Za-z0-9._-], got \"" + setup.listen + "\"";
      return nullptr;
    }
    auto shm = std::make_unique<ShmProvider>(ctx, std::move(options), setup.incarnation);
    if (!shm->listen(error, status)) return nullptr;
    return shm;
  }
};

}  // namespace

const ProviderKind& shmKind() {
  static const ShmKind kind;
  return kind;
}

}  // namespace rvma
