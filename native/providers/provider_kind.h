// What a provider's folder tells the engine and the addon about it: its name, its address
// scheme, when it runs, how it reads its options and opens, and what it reports of itself.
// provider_kinds.cpp is the one table of them; nothing else names a provider.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "option_bag.h"
#include "provider.h"

namespace rvma {

// What an endpoint asks of one provider.
struct ProviderSetup {
  const OptionBag& group;  // its option group (not given(): the defaults)
  std::string listen;      // the endpoint's listen address when it has this provider's scheme, else ""
  uint64_t incarnation;
};

// Facts a provider reports for Endpoint.capabilities(), as JSON members ("key": value).
class CapabilityFacts {
 public:
  void add(const std::string& key, const std::string& json) {
    text_ += (text_.empty() ? "" : ",") + quote(key) + ":" + json;
  }
  const std::string& members() const { return text_; }
  static std::string quote(const std::string& s);

 private:
  std::string text_;
};

class ProviderKind {
 public:
  virtual ~ProviderKind() = default;
  virtual const char* name() const = 0;
  // The scheme of the addresses it listens at ("tcp://"); "" when it listens at none.
  virtual const char* scheme() const { return ""; }
  // With provider "auto": whether it runs. Named alone (provider "tcp"), it always runs.
  virtual bool runsInAuto(const ProviderSetup& setup) const { return true; }
  // With "auto", when it cannot open: the kind that then listens at its listen address's host
  // and port instead, in its own scheme ("": none, the endpoint fails). Later in the table.
  virtual const char* fallback() const { return ""; }
  // Ready to start (listening, not yet on progress); nullptr with *status and *error when it
  // cannot run here (bad options, no device, an address it cannot bind).
  virtual std::unique_ptr<Provider> open(const ProviderContext& ctx, const ProviderSetup& setup, Status* status,
                                         std::string* error) const = 0;
  // Whether this build runs it (verbs without rdma-core does not: open() says why).
  virtual bool built() const { return true; }
  // The wire protocol version it speaks; peers of another version are refused (0: no wire).
  virtual uint32_t protocolVersion() const { return 0; }
  virtual void describe(CapabilityFacts* facts) const {}
};

// Every kind this build knows, in routing order: the first whose provider reaches a peer
// carries the puts to it.
const std::vector<const ProviderKind*>& providerKinds();
const ProviderKind* findProviderKind(const std::string& name);

}  // namespace rvma
