// The in-process "wire": node id -> the receiving endpoint's mailbox table. Entries are weak
// so a closed or collected endpoint is simply unreachable.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "../../auth/peer_auth.h"
#include "../../core/mailbox_table.h"

namespace rvma {

class LoopbackFabric {
 public:
  static LoopbackFabric& instance();
  // False if another live endpoint in this process already uses the node id.
  // auth: the endpoint's, which lives as long as its table.
  bool attach(const std::string& nodeId, std::weak_ptr<MailboxTable> table, uint64_t incarnation,
              const auth::PeerAuth* auth);
  void detach(const std::string& nodeId, const MailboxTable* table);
  std::shared_ptr<MailboxTable> find(const std::string& nodeId, uint64_t* incarnation = nullptr,
                                     const auth::PeerAuth** auth = nullptr);

 private:
  struct Node {
    std::weak_ptr<MailboxTable> table;
    uint64_t incarnation;
    const auth::PeerAuth* auth;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Node> nodes_;
};

}  // namespace rvma
