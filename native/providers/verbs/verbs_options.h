#pragma once
#include <cstdint>
#include <string>

#include "../address.h"

namespace rvma {

struct VerbsOptions {
  std::string listen;                 // "rdma://IP:PORT" (port 0: ephemeral), "" to accept nothing
  uint32_t slots = 64;                // landing-ring slots per connection = puts in flight per peer
  uint32_t slotBytes = 16 * 1024;     // puts up to slotBytes - header travel eagerly
  uint32_t receiveDepth = 4096;       // buffers of the shared receive queue (at most the device's max_srq_wr)
  uint64_t maxPutBytes = 1ull << 32;  // larger puts (eager or read) are refused with TooLarge
  uint32_t keepaliveMs = 1000;        // a peer not heard from this long is pinged
  uint32_t peerTimeoutMs = 5000;      // a peer not heard from longer than this is lost
  uint32_t connectTimeoutMs = 5000;   // rdma_cm setup plus the hellos
  uint64_t registrationCacheBytes = 256ull << 20;  // registrations kept unused (see RegistrationCache)
  uint32_t busyPollUs = 0;            // thread progress: poll the CQ this long after activity (Progress::busyPoll)
};

// "rdma://HOST:PORT" -> host, port. False when the form is wrong.
inline bool parseRdmaAddress(const std::string& address, std::string* host, uint16_t* port) {
  return parseAddress("rdma://", address, host, port);
}

}  // namespace rvma
