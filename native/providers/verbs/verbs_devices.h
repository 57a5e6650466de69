// The RDMA devices present now, with their ports and GIDs, for Endpoint.capabilities().
#pragma once
#include <string>

namespace rvma {

// A JSON array of { name, activePorts, firmware?, maxMrBytes?, ports: [{ port, state,
// activeMtu, linkLayer, lid, gids: [{ index, gid, type }] }] } (src/mailbox/endpoint-options.ts).
std::string rdmaDevicesJson();

}  // namespace rvma
