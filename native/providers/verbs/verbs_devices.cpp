#include "verbs_devices.h"

#include <infiniband/verbs.h>

#include <cstdio>

#include "../provider_kind.h"

namespace rvma {
namespace {

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

std::string member(const char* key, const std::string& json) { return CapabilityFacts::quote(key) + ":" + json; }
std::string text(const std::string& s) { return CapabilityFacts::quote(s); }
std::string number(double v) {
  char out[32];
  std::snprintf(out, sizeof out, "%.17g", v);
  return out;
}

// The non-zero entries of a port's GID table (what an RDMA connection can be addressed by).
std::string portGids(ibv_context* ctx, uint8_t port, int tableLength) {
  std::string gids;
  constexpr int kMaxListed = 32;  // a RoCE port lists one entry per IP address and type
  int listed = 0;
  for (int index = 0; index < tableLength && listed < kMaxListed; index++) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(ctx, port, uint32_t(index), &entry, 0) != 0) continue;  // an unused entry
    bool zero = true;
    for (uint8_t byte : entry.gid.raw) zero = zero && byte == 0;
    if (zero) continue;
    gids += std::string(listed++ ? "," : "") + "{" + member("index", number(index)) + "," +
            member("gid", text(gidText(entry.gid))) + "," + member("type", text(gidType(entry.gid_type))) + "}";
  }
  return "[" + gids + "]";
}

std::string portInfo(ibv_context* ctx, uint8_t port, const ibv_port_attr& attr) {
  return "{" + member("port", number(port)) + "," + member("state", text(portState(attr.state))) + "," +
         member("activeMtu", number(128 << int(attr.active_mtu))) + "," +  // IBV_MTU_256 is 1
         member("linkLayer", text(attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand")) + "," +
         member("lid", number(attr.lid)) + "," + member("gids", portGids(ctx, port, attr.gid_tbl_len)) + "}";
}

}  // namespace

std::string rdmaDevicesJson() {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (!list) return "[]";
  std::string devices;
  for (int i = 0; i < count; i++) {
    std::string device = member("name", text(ibv_get_device_name(list[i])));
    uint32_t active = 0;
    std::string ports;
    if (ibv_context* ctx = ibv_open_device(list[i])) {
      ibv_device_attr attr{};
      if (ibv_query_device(ctx, &attr) == 0) {
        device += "," + member("firmware", text(attr.fw_ver)) + "," + member("maxMrBytes", number(double(attr.max_mr_size)));
        for (uint8_t port = 1; port <= attr.phys_port_cnt; port++) {
          ibv_port_attr pattr{};
          if (ibv_query_port(ctx, port, &pattr) != 0) continue;
          if (pattr.state == IBV_PORT_ACTIVE) active++;
          ports += std::string(ports.empty() ? "" : ",") + portInfo(ctx, port, pattr);
        }
      }
      ibv_close_device(ctx);
    }
    device += "," + member("activePorts", number(active)) + "," + member("ports", "[" + ports + "]");
    devices += std::string(i ? "," : "") + "{" + device + "}";
  }
  ibv_free_device_list(list);
  return "[" + devices + "]";
}

}  // namespace rvma
