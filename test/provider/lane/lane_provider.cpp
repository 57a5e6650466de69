#include "lane_provider.h"

#include <set>

#include "../../../native/core/process_nodes.h"

namespace rvma {
namespace {

// The node ids of this process's endpoints that run the lane.
std::mutex lanesMu;
std::set<std::string>& lanes() {
  static auto* names = new std::set<std::string>();
  return *names;
}

}  // namespace

LaneProvider::LaneProvider(ProviderContext ctx) : ctx_(std::move(ctx)) {
  std::lock_guard<std::mutex> lock(lanesMu);
  lanes().insert(ctx_.nodeId);
}

void LaneProvider::close() {
  std::lock_guard<std::mutex> lock(lanesMu);
  if (!open_) return;
  open_ = false;
  lanes().erase(ctx_.nodeId);
}

bool LaneProvider::reaches(const std::string& peer) {
  std::lock_guard<std::mutex> lock(lanesMu);
  return lanes().count(peer) && ProcessNodes::instance().find(peer);
}

void LaneProvider::put(PutRequest req) {
  uint64_t incarnation = 0;
  std::shared_ptr<MailboxTable> target = reaches(*req.peer) ? ProcessNodes::instance().find(*req.peer, &incarnation) : nullptr;
  if (!target || (req.incarnation && req.incarnation != incarnation)) return ctx_.events.putSettled(req.id, Status::PeerLost);
  Reservation r;
  Status s = target->reserve(req.vaddr, req.where, req.len, ctx_.nodeId, &r);
  if (ok(s)) {
    req.copyTo(r.dst);
    target->commit(r);
    std::lock_guard<std::mutex> lock(mu_);
    carried_[*req.peer]++;
  }
  ctx_.events.putSettled(req.id, s);
}

void LaneProvider::describePeers(std::vector<PeerInfo>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [peer, puts] : carried_) out->push_back(PeerInfo{peer, "lane", "carried " + std::to_string(puts)});
}

}  // namespace rvma
