// The shm handshake: three messages on the connection's unix socket (SOCK_SEQPACKET, so one
// message is one datagram). Offer (dialer -> acceptor, with the segment's memfd and both
// eventfds attached), Accept (acceptor -> dialer), Confirm (dialer -> acceptor). Each carries
// the sender's node id and incarnation, and the address and value of a probe word in its
// memory: the peer reads it with process_vm_readv to learn whether it can pull far puts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rvma::shm {

enum class HelloKind : uint16_t { Offer = 1, Accept = 2, Confirm = 3 };

constexpr uint32_t kHelloFlagCanPull = 1;  // I read your probe: send me far puts
constexpr size_t kHelloFixedBytes = 48;
constexpr size_t kMaxNodeIdBytes = 255;

struct Hello {
  HelloKind kind = HelloKind::Offer;
  uint32_t flags = 0;
  uint64_t incarnation = 0;
  uint64_t ringBytes = 0;  // Offer: the size of each direction's ring; else 0
  uint64_t probeAddress = 0, probeValue = 0;
  std::string nodeId;
};

std::vector<uint8_t> encodeHello(const Hello& h);
// "" and *out when the message is a well-formed hello of the expected kind, else why not.
std::string decodeHello(const uint8_t* p, size_t len, HelloKind expected, Hello* out);

}  // namespace rvma::shm
