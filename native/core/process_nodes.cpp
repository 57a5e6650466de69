#include "process_nodes.h"

namespace rvma {

ProcessNodes& ProcessNodes::instance() {
  static ProcessNodes* nodes = new ProcessNodes();  // never destroyed: used until exit
  return *nodes;
}

bool ProcessNodes::attach(const std::string& nodeId, std::weak_ptr<MailboxTable> table, uint64_t incarnation,
                            const auth::PeerAuth* auth) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = nodes_[nodeId];
  if (!slot.table.expired()) return false;
  slot = Node{std::move(table), incarnation, auth};
  return true;
}

void ProcessNodes::detach(const std::string& nodeId, const MailboxTable* table) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(nodeId);
  if (it == nodes_.end()) return;
  auto live = it->second.table.lock();
  if (!live || live.get() == table) nodes_.erase(it);
}

std::shared_ptr<MailboxTable> ProcessNodes::find(const std::string& nodeId, uint64_t* incarnation,
                                                   const auth::PeerAuth** auth) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(nodeId);
  if (it == nodes_.end()) return nullptr;
  if (incarnation) *incarnation = it->second.incarnation;
  if (auth) *auth = it->second.auth;
  return it->second.table.lock();
}

}  // namespace rvma
