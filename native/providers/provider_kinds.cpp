// The one table of providers. A provider is its folder plus one line here.
#include <cstdio>

#include "provider_kind.h"

namespace rvma {

const ProviderKind& loopbackKind();
const ProviderKind& verbsKind();
const ProviderKind& shmKind();
const ProviderKind& tcpKind();
#ifdef RVMA_TEST_PROVIDER
const ProviderKind& laneKind();
#endif

const std::vector<const ProviderKind*>& providerKinds() {
  // Routing order: in-process peers first, then RDMA, then the same host, then the network.
  static const std::vector<const ProviderKind*> kinds = {
      &loopbackKind(),
      &verbsKind(),
      &shmKind(),
      &tcpKind(),
#ifdef RVMA_TEST_PROVIDER
      &laneKind(),
#endif
  };
  return kinds;
}

const ProviderKind* findProviderKind(const std::string& name) {
  for (const ProviderKind* kind : providerKinds()) {
    if (name == kind->name()) return kind;
  }
  return nullptr;
}

std::string CapabilityFacts::quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

}  // namespace rvma
