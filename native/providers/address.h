// "SCHEME://HOST:PORT" addresses of the network providers (tcp://, rdma://).
#pragma once
#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace rvma {

// False when the address does not start with scheme ("tcp://") or has no valid port.
// A bracketed IPv6 host ("[::1]") comes back without its brackets.
bool parseAddress(const std::string& scheme, const std::string& address, std::string* host, uint16_t* port);

// Resolves host:port to the first usable socket address; *error says why not.
bool resolveAddress(const std::string& host, uint16_t port, sockaddr_storage* out, socklen_t* len, std::string* error);

// The numeric address of a connected socket's peer, without its port ("" when not connected).
std::string peerHost(int fd);

}  // namespace rvma
