#include "loopback_provider.h"

#include "loopback_fabric.h"

namespace rvma {

bool LoopbackProvider::reaches(const std::string& peer) { return LoopbackFabric::instance().find(peer) != nullptr; }

void LoopbackProvider::put(const PutRequest& req) {
  // The shared_ptr keeps the target alive while bytes are copied, even if it closes meanwhile.
  uint64_t incarnation = 0;
  std::shared_ptr<MailboxTable> target = LoopbackFabric::instance().find(req.peer, &incarnation);
  // A put meant for an earlier incarnation of the node must not reach its successor.
  bool same = req.incarnation == 0 || req.incarnation == incarnation;
  if (!target || !same) return ctx_.events.putDone(req.id, Status::PeerLost);
  Reservation r;
  Status s = target->reserve(req.vaddr, req.where, req.len, ctx_.nodeId, &r);
  if (ok(s)) {
    req.copyTo(r.dst);
    target->commit(r);
  }
  ctx_.events.putDone(req.id, s);
}

}  // namespace rvma
