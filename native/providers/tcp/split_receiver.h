// Receiver side of puts split across a sender's connections, for one sender incarnation. The
// first part to arrive reserves the whole put's range at once, so the put is bounds-checked
// whole and lands in one buffer; each part writes its own slice; the put counts once, when
// every part is in. A part lost with its connection is missing again, not fatal: the sender
// re-sends it (the same part: same put id, offset and length) over another connection and it
// rewrites its slice. A put that can no longer complete is dropped by its owner (PutWindow:
// the sender's floor passed it, or the sender is gone), which releases its reservation
// uncounted: no epoch ends on a partial put.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "../../core/mailbox_table.h"
#include "tcp_frames.h"

namespace rvma {

class TcpConnection;

class SplitReceiver {
 public:
  explicit SplitReceiver(MailboxTable& table) : table_(table) {}
  ~SplitReceiver();  // releases what is left; no part may still be being written
  SplitReceiver(const SplitReceiver&) = delete;
  SplitReceiver& operator=(const SplitReceiver&) = delete;

  enum class Begin {
    Write,      // *dst is where the part's bytes go
    Refuse,     // the first part of a put that cannot be reserved: NACK with status, drain
    Landed,     // a part already in (its first Ack was lost): answer Ack, drain
    Busy,       // another connection is writing this very part: that one is stale
    Violation,  // contradicts earlier parts of the put (a protocol error)
  };
  struct Started {
    Begin what;
    uint8_t* dst = nullptr;
    Status status = Status::Ok;
    TcpConnection* writer = nullptr;  // Busy
  };
  // Part f (of put id, extension ext) arrives on conn, whose serial number is `serial`.
  Started begin(uint64_t id, const wire::FrameHeader& f, const wire::PartExt& ext, TcpConnection* conn, uint64_t serial);
  enum class End { Partial, Placed, Violation };
  // The part at `offset` is all in. Placed: it was the last, and the put was counted.
  End end(uint64_t id, uint64_t offset);
  // The part's connection died while it was being written: the part is missing again.
  void abort(uint64_t id, uint64_t offset);
  // Connections writing parts of puts below `floor` (they must be closed before dropBelow).
  void writersBelow(uint64_t floor, std::vector<TcpConnection*>* out) const;
  // Releases every put below floor, uncounted.
  void dropBelow(uint64_t floor);

 private:
  struct Part {
    uint64_t offset, len;
    TcpConnection* writer;  // while being written
    uint64_t serial;        // of the connection that wrote it last
    bool landed;
  };
  struct Entry {
    uint64_t vaddr, putOffset, putLen;
    uint32_t parts;
    Reservation res;
    std::vector<Part> seen;
  };

  MailboxTable& table_;
  std::map<uint64_t, Entry> entries_;
};

}  // namespace rvma
