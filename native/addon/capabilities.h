#pragma once
#include <napi.h>

namespace rvma::addon {
// { providers: string[], rdmaCore: boolean, devices: [{ name, activePorts }] }
Napi::Value Capabilities(const Napi::CallbackInfo& info);
}
