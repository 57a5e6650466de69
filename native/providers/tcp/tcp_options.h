#pragma once
#include <cstdint>
#include <string>

#include "../address.h"

namespace rvma {

struct TcpOptions {
  std::string listen;  // "tcp://HOST:PORT" (port 0: ephemeral), "" to accept nothing
  uint64_t maxPutBytes = 1ull << 32;          // larger puts are refused (NACK TooLarge)
  uint64_t maxInflightBytes = 64ull << 20;    // per connection; further puts wait
  uint32_t keepaliveMs = 1000;                // idle connections are probed this often
  uint32_t peerTimeoutMs = 5000;              // silence longer than this loses the peer
  uint32_t connectTimeoutMs = 5000;
  uint32_t stripes = 1;                       // connections per peer this side dials
  uint64_t stripeMinBytes = 1ull << 20;       // smaller puts travel whole on one connection
  bool stripeReverse = false;                 // send parts last-first, one at a time (tests order-freedom)
  // A connection that breaks keeps its puts this long for a new connection to the same
  // incarnation of the peer, which gets them again; a receiver keeps what it knows of a
  // sender's puts as long once the sender has no connection left. 0: puts fail at once.
  uint32_t reconnectMs = 3000;
  // Accepted connections alive at once (handshaking or ready); past it a new one is closed at
  // once. Bounds what peers without the secret can hold of this process (fds, memory).
  uint32_t maxConnections = 1024;
  // Accepted connections still in their handshake; past it the oldest of them is closed, so
  // that idle or slow handshakes cannot keep peers out for longer than connectTimeoutMs.
  uint32_t maxHandshakes = 64;
};

// "tcp://HOST:PORT" -> host, port. False when the form is wrong.
inline bool parseTcpAddress(const std::string& address, std::string* host, uint16_t* port) {
  return parseAddress("tcp://", address, host, port);
}

}  // namespace rvma
