// Receiver side of puts split across a peer's connections. The first part to arrive
// reserves the whole put's range at once, so the put is bounds-checked whole and lands in
// one buffer; each part writes its own slice; the put counts once, when every part is in.
// A part lost with its connection cancels the reservation: no epoch ends on a partial put.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "../../core/mailbox_table.h"
#include "../../wire/frames.h"

namespace rvma {

class SplitReceiver {
 public:
  using Key = std::pair<std::string, uint64_t>;  // sender node id, put id

  explicit SplitReceiver(MailboxTable& table) : table_(table) {}
  ~SplitReceiver();

  enum class Begin { Write, Refuse, Violation };
  // Write: *dst is where the part's bytes go. Refuse: NACK with *status and drain.
  // Violation: the part contradicts earlier parts of the same put (a protocol error).
  Begin begin(const Key& key, const wire::FrameHeader& f, const wire::PartExt& ext, uint8_t** dst, Status* status);
  // The part's bytes are all in. False on a violation (more bytes or parts than announced).
  bool end(const Key& key, uint64_t len);
  // The part's connection died while it was being written.
  void abort(const Key& key);
  // The node has no connection left: its unfinished puts can never complete.
  void forgetNode(const std::string& node);

 private:
  struct Entry {
    uint64_t vaddr, putOffset, putLen;
    uint32_t parts;
    Reservation res;
    bool reserved = false;
    Status refused = Status::Ok;
    uint64_t received = 0;
    uint32_t seen = 0, writers = 0;
  };
  void release(Entry& e, bool commit);
  void finishIfDone(std::map<Key, Entry>::iterator it);

  MailboxTable& table_;
  std::map<Key, Entry> entries_;
};

}  // namespace rvma
