#include "loopback_provider.h"

#include "../../core/process_nodes.h"

namespace rvma {

bool LoopbackProvider::reaches(const std::string& peer) { return ProcessNodes::instance().find(peer) != nullptr; }

void LoopbackProvider::put(PutRequest req) {
  // The shared_ptr keeps the target alive while bytes are copied, even if it closes meanwhile.
  uint64_t incarnation = 0;
  const auth::PeerAuth* theirs = nullptr;
  std::shared_ptr<MailboxTable> target = ProcessNodes::instance().find(*req.peer, &incarnation, &theirs);
  // A put meant for an earlier incarnation of the node must not reach its successor.
  bool same = req.incarnation == 0 || req.incarnation == incarnation;
  if (!target || !same) return ctx_.events.putSettled(req.id, Status::PeerLost);
  std::string refused = authenticate(*req.peer, incarnation, theirs);
  if (!refused.empty()) {
    target->events().authFailed("loopback:" + ctx_.nodeId, refused + " (it claimed node \"" + ctx_.nodeId + "\")");
    ctx_.events.authFailed("loopback:" + *req.peer, refused);
    return ctx_.events.putSettled(req.id, Status::Auth, refused);
  }
  Reservation r;
  Status s = target->reserve(req.vaddr, req.where, req.len, ctx_.nodeId, &r);
  if (ok(s)) {
    req.copyTo(r.dst);
    target->commit(r);
  }
  ctx_.events.putSettled(req.id, s);
}

std::string LoopbackProvider::authenticate(const std::string& peer, uint64_t incarnation, const auth::PeerAuth* theirs) {
  const auth::PeerAuth& ours = ctx_.auth;
  if (ours.enabled() != theirs->enabled()) return auth::mismatch(ours.enabled());
  if (!ours.enabled()) return "";
  auto known = authenticated_.find(peer);
  if (known != authenticated_.end() && known->second == incarnation) return "";
  // Both directions, as over a wire: each side proves itself to the other over fresh nonces.
  constexpr auth::Context context{"loopback", 1};
  auth::Nonce mine, yours;
  auth::PeerAuth::freshNonce(&mine);
  auth::PeerAuth::freshNonce(&yours);
  auth::Party us{auth::Role::Dialer, mine, ctx_.nodeId, incarnation_};
  auth::Party them{auth::Role::Acceptor, yours, peer, incarnation};
  auth::Proof ourProof = ours.prove(context, us, them), theirProof = theirs->prove(context, them, us);
  if (!theirs->verify(context, us, them, ourProof.data()) || !ours.verify(context, them, us, theirProof.data())) {
    return auth::kBadProof;
  }
  authenticated_[peer] = incarnation;
  return "";
}

}  // namespace rvma
