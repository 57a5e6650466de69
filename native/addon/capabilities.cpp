// What this build contains, as each provider's kind reports it (providers/provider_kinds.cpp).
#include "capabilities.h"

#include <string>

#include "../providers/provider_kind.h"

namespace rvma::addon {

// { providers: the names this build runs, protocols: { [name]: wire version }, ...each
// provider's facts (shm: cma; verbs: rdmaCore, devices) }.
Napi::Value Capabilities(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string providers, protocols;
  CapabilityFacts facts;
  for (const ProviderKind* kind : providerKinds()) {
    const std::string name = CapabilityFacts::quote(kind->name());
    if (kind->built()) providers += (providers.empty() ? "" : ",") + name;
    if (kind->protocolVersion()) {
      protocols += (protocols.empty() ? "" : ",") + name + ":" + std::to_string(kind->protocolVersion());
    }
    kind->describe(&facts);
  }
  facts.add("providers", "[" + providers + "]");
  facts.add("protocols", "{" + protocols + "}");
  Napi::Object json = env.Global().Get("JSON").As<Napi::Object>();
  return json.Get("parse").As<Napi::Function>().Call(json, {Napi::String::New(env, "{" + facts.members() + "}")});
}

}  // namespace rvma::addon
