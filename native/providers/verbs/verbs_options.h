#pragma once
#include <cstdint>
#include <string>

#include "../address.h"

namespace rvma {

struct VerbsOptions {
  std::string listen;                 // "rdma://IP:PORT" (port 0: ephemeral), "" to accept nothing
  uint32_t slots = 64;                // landing-ring slots per connection = puts in flight per peer
  uint32_t slotBytes = 16 * 1024;     // puts up to slotBytes - header travel eagerly
  uint64_t maxPutBytes = 1ull << 32;  // larger RTS requests are refused with TooLarge
};

// "rdma://HOST:PORT" -> host, port. False when the form is wrong.
inline bool parseRdmaAddress(const std::string& address, std::string* host, uint16_t* port) {
  return parseAddress("rdma://", address, host, port);
}

}  // namespace rvma
