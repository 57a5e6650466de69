// What this build contains and, where rdma-core was linked, which RDMA devices are present.
#include "capabilities.h"

#include <unistd.h>

#include "../providers/shm/shm_channel.h"

#ifdef RVMA_HAVE_RDMA_CORE
#include <infiniband/verbs.h>
#endif

namespace rvma::addon {
namespace {

// Whether this process may use cross-memory reads at all (a seccomp filter, as container
// runtimes install by default, refuses them outright). A peer may still refuse them: another
// user, or ptrace restrictions; each connection probes its peer again.
bool crossMemoryPermitted() {
  uint64_t probe = 0x5eed, copy = 0;
  return shm::pull(getpid(), reinterpret_cast<uint8_t*>(&copy), reinterpret_cast<uint64_t>(&probe), sizeof probe) ==
             shm::Pull::Ok &&
         copy == probe;
}

Napi::Array rdmaDevices(Napi::Env env) {
  Napi::Array devices = Napi::Array::New(env);
#ifdef RVMA_HAVE_RDMA_CORE
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (!list) return devices;
  for (int i = 0; i < count; i++) {
    Napi::Object device = Napi::Object::New(env);
    device.Set("name", ibv_get_device_name(list[i]));
    uint32_t active = 0;
    if (ibv_context* ctx = ibv_open_device(list[i])) {
      ibv_device_attr attr{};
      if (ibv_query_device(ctx, &attr) == 0) {
        for (uint8_t port = 1; port <= attr.phys_port_cnt; port++) {
          ibv_port_attr pattr{};
          if (ibv_query_port(ctx, port, &pattr) == 0 && pattr.state == IBV_PORT_ACTIVE) active++;
        }
      }
      ibv_close_device(ctx);
    }
    device.Set("activePorts", active);
    devices.Set(uint32_t(i), device);
  }
  ibv_free_device_list(list);
#endif
  return devices;
}

}  // namespace

Napi::Value Capabilities(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object caps = Napi::Object::New(env);
  Napi::Array providers = Napi::Array::New(env);
  providers.Set(0u, "loopback");
  providers.Set(1u, "tcp");
  providers.Set(2u, "shm");
#ifdef RVMA_HAVE_VERBS
  providers.Set(3u, "verbs");
#endif
  caps.Set("providers", providers);
#ifdef RVMA_HAVE_RDMA_CORE
  caps.Set("rdmaCore", true);
#else
  caps.Set("rdmaCore", false);
#endif
  caps.Set("devices", rdmaDevices(env));
  caps.Set("cma", crossMemoryPermitted());
  return caps;
}

}  // namespace rvma::addon
