#include "inbound_senders.h"

namespace rvma {

std::shared_ptr<PutWindow> InboundSenders::attach(const std::string& node, uint64_t incarnation) {
  // Connections of an older incarnation still open keep their window until they close.
  for (auto it = slots_.lower_bound(Key{node, 0}); it != slots_.end() && it->first.first == node;) {
    it = it->first.second == incarnation ? std::next(it) : slots_.erase(it);
  }
  Slot& slot = slots_[Key{node, incarnation}];
  if (!slot.window) slot.window = std::make_shared<PutWindow>(table_, nextId_++);
  slot.connections++;
  return slot.window;
}

void InboundSenders::detach(const std::string& node, uint64_t incarnation, uint64_t nowMs, bool forget) {
  auto it = slots_.find(Key{node, incarnation});
  if (it == slots_.end() || --it->second.connections > 0) return;
  if (keepMs_ == 0 || forget) {
    slots_.erase(it);
  } else {
    it->second.idleSinceMs = nowMs;
  }
}

void InboundSenders::expire(uint64_t nowMs) {
  for (auto it = slots_.begin(); it != slots_.end();) {
    // idleSinceMs may be later than nowMs: connections that die during the tick that called
    // this detach with a fresher clock.
    const uint64_t since = it->second.idleSinceMs;
    bool idle = it->second.connections == 0 && nowMs >= since && nowMs - since >= keepMs_;
    it = idle ? slots_.erase(it) : std::next(it);
  }
}

}  // namespace rvma
