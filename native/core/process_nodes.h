// The endpoints of this process by node id: their mailbox tables (the loopback provider's
// "wire") and a node id's uniqueness in the process. Entries are weak so a closed or collected
// endpoint is simply unreachable.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "mailbox_table.h"

namespace rvma {

namespace auth {
class PeerAuth;
}

class ProcessNodes {
 public:
  static ProcessNodes& instance();
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
