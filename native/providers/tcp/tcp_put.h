// A put as the tcp provider carries it: the request, and once it went out, its id on the wire
// and where it went: the peer incarnation, and the receiver's window of our puts there. A put
// that has been sent is only ever sent again with the same id, into the same window of the
// same incarnation (see docs/protocol.md, Reconnection).
#pragma once
#include <cstdint>

#include "../provider.h"
#include "sent_puts.h"

namespace rvma {

struct OutPut {
  PutRequest req;
  uint64_t wireId = 0;       // 0: never sent
  uint64_t incarnation = 0;  // of the peer it was sent to (with wireId)
  uint64_t window = 0;       // the receiver's window it was sent into (with wireId)
  SentPuts::Node* to = nullptr;  // where its id waits to be settled
};

}  // namespace rvma
