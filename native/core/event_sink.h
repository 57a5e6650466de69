// How the core and the providers report upward. The engine implements it: it queues the
// events and wakes JS once per batch.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mailbox.h"
#include "status.h"

namespace rvma {

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void completions(const std::vector<CompletionRecord>& records) = 0;
  // A closed mailbox whose last in-flight put finished: its buffers may now be reused.
  virtual void mailboxReleased(uint32_t mailboxId) = 0;
  // A put's outcome, reported exactly once: Ok, or the status it failed with and, when there
  // is more to say than the status (e.g. why no connection could be made), why.
  virtual void putSettled(uint64_t putId, Status status, const std::string& reason) = 0;
  void putSettled(uint64_t putId, Status status) { putSettled(putId, status, std::string()); }
  // A connect request finished; detail is the peer's node id, or why it failed.
  virtual void connected(uint64_t requestId, Status status, const std::string& detail) = 0;
  // A connection to a peer that had completed its handshake is gone.
  virtual void peerLost(const std::string& node, uint64_t incarnation, const std::string& why) = 0;
  // A raw one-sided write landed in a registered region.
  virtual void rawWritten(uint32_t regionId, uint64_t offset, uint64_t len) = 0;
  virtual void regionReleased(uint32_t regionId) = 0;
  // A peer broke the protocol or failed the handshake; that connection was closed.
  virtual void protocolError(const std::string& peer, const std::string& message) = 0;
  // A peer failed authentication (peer: its address, or the node id it claimed); that
  // connection was closed before any of its frames was read.
  virtual void authFailed(const std::string& peer, const std::string& message) = 0;
};

}  // namespace rvma
