// The receiver's PutWindows, one per sender incarnation, shared by all of that sender's
// connections. A window outlives the sender's last connection by tcp.reconnectMs, so that
// puts the sender re-sends over a new connection are recognised (and its split puts can
// still complete); then it goes, and with it what it held. A window made later for the same
// sender has another name, so the sender sends nothing into it again. A sender's new
// incarnation replaces the old one's window at once: that process is gone.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "put_window.h"

namespace rvma {

class InboundSenders {
 public:
  InboundSenders(MailboxTable& table, uint32_t keepMs) : table_(table), keepMs_(keepMs) {}

  // A connection from (node, incarnation) completed its handshake.
  std::shared_ptr<PutWindow> attach(const std::string& node, uint64_t incarnation);
  // That connection is gone. forget: it broke the protocol, so its sender sends none of
  // its puts again; with no other connection left, the window goes at once.
  void detach(const std::string& node, uint64_t incarnation, uint64_t nowMs, bool forget);
  // Drops the windows of senders without a connection for longer than keepMs.
  void expire(uint64_t nowMs);
  void clear() { slots_.clear(); }

 private:
  struct Slot {
    std::shared_ptr<PutWindow> window;
    uint32_t connections = 0;
    uint64_t idleSinceMs = 0;
  };
  using Key = std::pair<std::string, uint64_t>;

  MailboxTable& table_;
  uint32_t keepMs_;
  uint64_t nextId_ = 1;
  std::map<Key, Slot> slots_;
};

}  // namespace rvma
