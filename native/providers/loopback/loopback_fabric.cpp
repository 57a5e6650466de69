#include "loopback_fabric.h"

namespace rvma {

LoopbackFabric& LoopbackFabric::instance() {
  static LoopbackFabric* fabric = new LoopbackFabric();  // never destroyed: used until exit
  return *fabric;
}

bool LoopbackFabric::attach(const std::string& nodeId, std::weak_ptr<MailboxTable> table) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = nodes_[nodeId];
  if (!slot.expired()) return false;
  slot = std::move(table);
  return true;
}

void LoopbackFabric::detach(const std::string& nodeId, const MailboxTable* table) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(nodeId);
  if (it == nodes_.end()) return;
  auto live = it->second.lock();
  if (!live || live.get() == table) nodes_.erase(it);
}

std::shared_ptr<MailboxTable> LoopbackFabric::find(const std::string& nodeId) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(nodeId);
  return it == nodes_.end() ? nullptr : it->second.lock();
}

}  // namespace rvma
