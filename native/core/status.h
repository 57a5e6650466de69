// Outcome codes shared by the core, providers and the addon. The TS layer maps each to an
// ERR_RVMA_* string; the numbers travel on the wire (NACKs), so never renumber them.
#pragma once
#include <cerrno>
#include <cstdint>

namespace rvma {

enum class Status : int32_t {
  Ok = 0,
  NoMailbox = 1,        // no mailbox open under that vaddr
  NoBuffer = 2,         // mailbox open but no buffer posted
  OutOfBounds = 3,      // offset + len past the buffer (or past its free space, for append)
  TooLarge = 4,         // the put is larger than the whole buffer
  Closed = 5,           // mailbox or endpoint closed
  InvalidArgument = 6,  // a caller passed something the core cannot accept
  MailboxExists = 7,    // vaddr already open
  TooManyBuffers = 8,   // the mailbox's FIFO of posted buffers is full
  NoPeer = 9,           // no provider reaches that node
  PeerLost = 10,        // the peer went away while the put was in flight
  Registration = 11,    // memory could not be registered for RDMA (the locked-memory limit)
  Ambiguous = 12,       // a re-sent put the receiver can no longer tell from its first delivery: refused, not placed twice
  Forbidden = 13,       // the mailbox or region does not allow puts from the sending node
  Auth = 14,            // the peer failed authentication (or one side authenticates and the other does not)
  AddressInUse = 15,    // a listen address another socket holds (local only: never sent to a peer)
  OutOfMemory = 16,     // memory for a buffer, a mailbox or a queued put could not be allocated (local only)
};

// Why a listen failed, from its errno: a taken address is told apart from a bad one.
inline Status listenFailure(int err) { return err == EADDRINUSE ? Status::AddressInUse : Status::InvalidArgument; }

inline bool ok(Status s) { return s == Status::Ok; }

}  // namespace rvma
