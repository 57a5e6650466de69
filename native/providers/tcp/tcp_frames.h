// Byte layouts of everything that crosses a stream transport (tcp), with bounds-checked
// decoding. Little-endian on the wire. docs/protocol.md describes the same bytes.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace rvma::wire {

constexpr uint32_t kMagic = 0x414d5652;  // "RVMA" as bytes on the wire
// 2: Window and Floor frames, Nack status 12 (Ambiguous); 3: Acks frames; 4: Nack status 13
// (Forbidden); 5: the hello's nonce and auth flag, and the proof after it; 6: kLazyAck;
// 7: kLateAck.
constexpr uint16_t kVersion = 7;
constexpr size_t kHelloBytes = 32;       // the fixed part: followed by the nonce, the node id, the address
constexpr size_t kNonceBytes = 32;
constexpr size_t kProofBytes = 32;       // follows the hello when both sides authenticate
constexpr uint16_t kHelloAuth = 1;       // hello flag: this side authenticates (and requires it)
constexpr size_t kMaxNodeIdBytes = 255;
constexpr size_t kMaxAddressBytes = 255;
constexpr size_t kHeaderBytes = 40;
constexpr size_t kPartExtBytes = 16;      // follows the header of a Put with parts >= 2
constexpr size_t kMaxErrorTextBytes = 1024;
constexpr uint32_t kMaxParts = 64;
// Longer frames are malformed outright; up to this, a Put over the receiver's own limit is
// refused with a NACK (TooLarge) and its payload drained.
constexpr uint64_t kMaxFrameBytes = 1ull << 40;

// First bytes each side sends on a new connection.
struct Hello {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint16_t flags = 0;  // kHelloAuth
  uint64_t incarnation = 0;
  std::array<uint8_t, kNonceBytes> nonce{};  // fresh per connection: what the peer's proof covers
  std::string nodeId;
  std::string listenAddress;  // where this node accepts connections ("" if it does not)
};

enum class FrameType : uint8_t {
  Put = 1,    // payload of len bytes follows
  Ack = 2,    // put id placed
  Nack = 3,   // put id refused; status says why
  Ping = 4,   // keepalive probe
  Pong = 5,   // keepalive answer
  Error = 6,  // protocol error text of len bytes follows; the sender closes
  RawWrite = 7,  // one-sided write of len bytes into registered region `vaddr` (its key)
  Floor = 8,   // id: every put id below it that the sender sent here is settled (never sent again)
  Window = 9,  // id: the receiver's name for the window of outcomes this connection's puts go into, nonzero
  Acks = 10,   // offset (>= 2) puts placed, the last of them put id: one answer for a run of them
};

// The most puts one Acks frame answers (a receiver starts a new frame after that many).
constexpr uint64_t kMaxAcksRun = 1u << 20;

// kLazyAck (Put, RawWrite): nothing waits on this put's answer soon, so the receiver may hold
// its Ack back to go with later ones (see TcpConnection::sendAnswer); refusals still go at once.
// kLateAck (with kLazyAck): nothing waits on the answer at all; it may be held back longer.
enum FrameFlags : uint8_t { kAppend = 1, kLazyAck = 2, kLateAck = 4 };
// The ack flags a Put or RawWrite may carry: none, lazy, or lazy and late.
constexpr bool validAckFlags(uint8_t flags) {
  return (flags & kLateAck) == 0 || (flags & kLazyAck) != 0;
}

struct FrameHeader {
  FrameType type;
  uint8_t flags = 0;
  uint16_t status = 0;
  uint32_t parts = 0;  // Put only: 0 = whole put; N >= 2 = one of N offset-addressed parts
  uint64_t id = 0;
  uint64_t vaddr = 0;
  uint64_t offset = 0;
  uint64_t len = 0;
};

// Where a part of a split put sits in the whole put.
struct PartExt {
  uint64_t putOffset = 0;
  uint64_t putLen = 0;
};

enum class DecodeResult { Ok, BadMagic, BadVersion, Malformed };

// The fixed part followed by the nonce, the node id and the listen address.
std::string encodeHello(const Hello& h);
// Reads the fixed part; the nonce, node id (*nodeIdLen bytes) and address (*addressLen) follow.
DecodeResult decodeHelloFixed(const uint8_t in[kHelloBytes], Hello* h, size_t* nodeIdLen, size_t* addressLen);

void encodeHeader(const FrameHeader& f, uint8_t out[kHeaderBytes]);
// Rejects unknown types and any field the type does not use that is not zero, bad flags,
// NACK statuses outside the known codes, a Window without a name, and lengths over kMaxFrameBytes.
DecodeResult decodeHeader(const uint8_t in[kHeaderBytes], FrameHeader* f);

void encodePartExt(const PartExt& e, uint8_t out[kPartExtBytes]);
// Checks that the part [offset, offset+len) lies inside the whole put.
DecodeResult decodePartExt(const uint8_t in[kPartExtBytes], const FrameHeader& f, PartExt* e);

const char* describe(DecodeResult r);

}  // namespace rvma::wire
