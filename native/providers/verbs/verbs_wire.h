// Messages of the verbs provider. Control messages travel as SENDs into 512-byte receive
// buffers; eager puts as RDMA_WRITE_WITH_IMM of an EagerHeader + payload into a slot of the
// receiver's landing ring (immediate = slot index, big-endian as verbs defines it); raw writes
// as RDMA_WRITE straight into the peer's region, then a RawMsg on the same queue pair. Fields
// are in host order, which is little-endian on every platform this builds for.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rvma::verbs {

constexpr uint32_t kMagic = 0x52564d56;  // "VMVR"
// 3: Ack status 13 (Forbidden); 4: peer authentication (hello nonce + flag, Auth); 5: Acks; 6: RTS head
constexpr uint16_t kVersion = 6;
constexpr uint32_t kCtrlBytes = 512;
constexpr uint32_t kAppend = 1;
constexpr uint32_t kRtsHead = 2;  // RtsMsg::flags: the put's first bytes follow the message (a gathered put's head)

enum class MsgType : uint16_t {
  Hello = 1,
  Rts = 2,
  Ack = 3,
  RegionQuery = 4,  // KeyMsg: where is region `key`? (answered by RegionInfo)
  RegionInfo = 5,
  Raw = 6,          // a raw write landed (answered by Ack)
  Revoke = 7,       // KeyMsg: region `key` is closing, forget it (answered by RevokeAck)
  RevokeAck = 8,    // KeyMsg: every write to `key` from this side was posted before this
  Ping = 9,         // header only: are you there? (answered by Pong)
  Pong = 10,        // header only
  Auth = 11,        // AuthMsg: the sender's proof that it knows the shared secret (auth/peer_auth.h)
  Acks = 12,        // AcksMsg: the answers of one round, 2 to kMaxAcks of them
};

struct CtrlHeader {
  uint32_t magic;
  uint16_t type;
  uint16_t status;  // Ack: Status of the put
};

// HelloMsg::flags.
constexpr uint16_t kHelloAuth = 1;  // the sender authenticates: it sends an Auth and wants one
constexpr uint32_t kNonceBytes = 32;
constexpr uint32_t kProofBytes = 32;

// First message each way. The ring is the only address + key that leaves a node; it leaves
// before the peer has authenticated, but it is this connection's alone, and its queue pair
// (the only one that can reach it) is destroyed when authentication fails.
struct HelloMsg {
  CtrlHeader h;
  uint16_t version;
  uint16_t nodeIdLen;  // node id bytes follow the struct
  uint32_t slots;
  uint32_t slotBytes;
  uint32_t ringRkey;
  uint64_t incarnation;
  uint64_t ringAddr;
  uint16_t listenPort;  // where the sender accepts connections, at the address it connects from; 0: nowhere
  uint16_t flags;       // kHelloAuth; other bits are refused
  uint16_t reserved[2];
  uint64_t maxPutBytes;  // the largest put or raw write the sender takes
  uint8_t nonce[kNonceBytes];  // fresh per connection: the peer's proof covers it (no replay)
};

// Sent by each side of an authenticating connection once it has the peer's hello (and has
// sent its own). Until the peer's verifies, nothing else of the peer's is accepted.
struct AuthMsg {
  CtrlHeader h;
  uint8_t proof[kProofBytes];
};

// Large put: the receiver RDMA_READs [addr, addr + len) under rkey into its mailbox buffer.
// With kRtsHead, the message's bytes past the struct are the put's first bytes (1 to
// kMaxRtsHead, fewer than len): they are copied, and the other len - head bytes are read from addr.
struct RtsMsg {
  CtrlHeader h;
  uint32_t flags;
  uint32_t rkey;
  uint64_t putId, vaddr, offset, len, addr;
};

// The answer to an eager put or an RTS (then it is the FIN). slot: the landing slot it frees
// (the credit going back), or kNoSlot.
struct AckMsg {
  CtrlHeader h;
  uint32_t slot;
  uint32_t reserved;
  uint64_t putId;
};
constexpr uint32_t kNoSlot = 0xffffffffu;

// One answer inside an AcksMsg: what an AckMsg says, without its header.
struct AckEntry {
  uint64_t putId;
  uint32_t slot;
  uint16_t status;
  uint16_t reserved;
};
constexpr uint32_t kMaxAcks = (kCtrlBytes - 16) / sizeof(AckEntry);
// A node id is 1 to 255 bytes on every provider; a hello naming a longer one is refused.
constexpr uint16_t kMaxNodeIdBytes = 255;
constexpr uint32_t kMaxRtsHead = kCtrlBytes - sizeof(RtsMsg);  // what a control message holds after an RtsMsg

// The answers a receiver gathered over one progress round, in one SEND: one receive buffer
// and one completion at the sender for a batch of puts, and their credits back together.
// Exactly 16 + 16 x count bytes.
struct AcksMsg {
  CtrlHeader h;
  uint32_t count;
  uint32_t reserved;
  AckEntry entries[kMaxAcks];
};

struct KeyMsg {
  CtrlHeader h;
  uint64_t key;
};

// A region lent for raw writes: the only memory of a node besides its landing ring whose
// address and key leave it, and only for regions the application registered for that.
struct RegionInfoMsg {
  CtrlHeader h;  // status: Ok, or why the region cannot be written
  uint32_t rkey;
  uint32_t reserved;
  uint64_t key, addr, len;
};

// Sent after the RDMA_WRITE(s) of a raw write: RC order makes it arrive after the data.
struct RawMsg {
  CtrlHeader h;
  uint64_t putId, key, offset, len;
};

// rdma_reject's private data when the acceptor cannot take a connection: why, so the dialer
// fails with the same status (Registration: the acceptor's locked-memory limit). Fits the
// smallest reject private data rdma_cm allows (148 bytes over IB CM).
struct RejectMsg {
  uint32_t magic;
  uint16_t status;
  uint16_t textLen;
  char text[120];
};

struct EagerHeader {
  uint64_t putId, vaddr, offset;
  uint32_t len, flags;
};

static_assert(sizeof(CtrlHeader) == 8 && sizeof(HelloMsg) == 88 && sizeof(AuthMsg) == 40 && sizeof(RtsMsg) == 56 &&
                  sizeof(AckMsg) == 24 && sizeof(AckEntry) == 16 && sizeof(AcksMsg) == kCtrlBytes && sizeof(KeyMsg) == 16 && sizeof(RegionInfoMsg) == 40 && sizeof(RawMsg) == 40 &&
                  sizeof(EagerHeader) == 32 && sizeof(RejectMsg) == 128,
              "wire layouts are fixed");
static_assert(offsetof(HelloMsg, flags) == 42 && offsetof(HelloMsg, maxPutBytes) == 48 && offsetof(HelloMsg, nonce) == 56,
              "hello fields where docs/protocol.md puts them");
static_assert(sizeof(HelloMsg) + 255 <= kCtrlBytes, "a hello with the longest node id fits a receive buffer");

}  // namespace rvma::verbs
