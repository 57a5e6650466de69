// "SCHEME://HOST:PORT" addresses of the network providers (tcp://, rdma://).
#pragma once
#include <cstdint>
#include <string>

namespace rvma {

// False when the address does not start with scheme ("tcp://") or has no valid port.
// A bracketed IPv6 host ("[::1]") comes back without its brackets.
bool parseAddress(const std::string& scheme, const std::string& address, std::string* host, uint16_t* port);

}  // namespace rvma
