// What this build contains and, where rdma-core was linked, which RDMA devices are present.
#include "capabilities.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "../providers/shm/shm_channel.h"
#include "../providers/shm/shm_layout.h"
#include "../providers/verbs/verbs_wire.h"
#include "../wire/frames.h"

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

#ifdef RVMA_HAVE_RDMA_CORE
std::string gidText(const ibv_gid& gid) {
  char text[40];
  const uint8_t* b = gid.raw;
  std::snprintf(text, sizeof text, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", b[0], b[1], b[2],
                b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return text;
}

// IBV_PORT_<state> without the prefix (ibv_port_state_str's words are meant for people).
const char* portState(ibv_port_state state) {
  switch (state) {
    case IBV_PORT_NOP: return "NOP";
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "unknown";
  }
}

const char* gidType(uint32_t type) {
  switch (type) {
    case IBV_GID_TYPE_IB: return "IB";
    case IBV_GID_TYPE_ROCE_V1: return "RoCEv1";
    case IBV_GID_TYPE_ROCE_V2: return "RoCEv2";
    default: return "unknown";
  }
}

// The non-zero entries of a port's GID table (what an RDMA connection can be addressed by).
Napi::Array portGids(Napi::Env env, ibv_context* ctx, uint8_t port, int tableLength) {
  Napi::Array gids = Napi::Array::New(env);
  constexpr int kMaxListed = 32;  // a RoCE port lists one entry per IP address and type
  for (int index = 0; index < tableLength && gids.Length() < kMaxListed; index++) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(ctx, port, uint32_t(index), &entry, 0) != 0) continue;  // an unused entry
    bool zero = true;
    for (uint8_t byte : entry.gid.raw) zero = zero && byte == 0;
    if (zero) continue;
    Napi::Object gid = Napi::Object::New(env);
    gid.Set("index", index);
    gid.Set("gid", gidText(entry.gid));
    gid.Set("type", gidType(entry.gid_type));
    gids.Set(gids.Length(), gid);
  }
  return gids;
}

Napi::Object portInfo(Napi::Env env, ibv_context* ctx, uint8_t port, const ibv_port_attr& attr) {
  Napi::Object info = Napi::Object::New(env);
  info.Set("port", port);
  info.Set("state", portState(attr.state));
  info.Set("activeMtu", 128 << int(attr.active_mtu));  // IBV_MTU_256 is 1
  info.Set("linkLayer", attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
  info.Set("lid", attr.lid);
  info.Set("gids", portGids(env, ctx, port, attr.gid_tbl_len));
  return info;
}
#endif

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
    Napi::Array ports = Napi::Array::New(env);
    if (ibv_context* ctx = ibv_open_device(list[i])) {
      ibv_device_attr attr{};
      if (ibv_query_device(ctx, &attr) == 0) {
        device.Set("firmware", attr.fw_ver);
        device.Set("maxMrBytes", double(attr.max_mr_size));
        for (uint8_t port = 1; port <= attr.phys_port_cnt; port++) {
          ibv_port_attr pattr{};
          if (ibv_query_port(ctx, port, &pattr) != 0) continue;
          if (pattr.state == IBV_PORT_ACTIVE) active++;
          ports.Set(ports.Length(), portInfo(env, ctx, port, pattr));
        }
      }
      ibv_close_device(ctx);
    }
    device.Set("activePorts", active);
    device.Set("ports", ports);
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
  // The wire protocol version each provider speaks; peers of another version are refused.
  Napi::Object protocols = Napi::Object::New(env);
  protocols.Set("tcp", wire::kVersion);
  protocols.Set("shm", shm::kVersion);
  protocols.Set("verbs", verbs::kVersion);
  caps.Set("protocols", protocols);
  return caps;
}

}  // namespace rvma::addon
