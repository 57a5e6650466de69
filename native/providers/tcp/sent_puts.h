// Sender side of exactly-once delivery over tcp: the put ids that go on the wire, and for
// each receiver node the ids it was sent that are not settled yet. The lowest of those is
// the floor the node is told in Floor frames: below it, the receiver may forget outcomes.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>

namespace rvma {

class SentPuts {
 public:
  struct Node {
    std::string id;
    std::deque<std::pair<uint64_t, bool>> open;  // ids sent, in order; true once settled
    uint64_t told = 0;                           // the floor last announced
  };

  // A fresh wire id for a put to node, open until settle(). Ids grow with every call, whatever
  // the node, so a put never sent has an id above every id sent before it.
  uint64_t assign(const std::string& node, Node** to) {
    *to = nodeOf(node);
    return assign(*to);
  }
  // The same for a node already looked up (nodeOf): a connection keeps its peer's.
  uint64_t assign(Node* to);
  Node* nodeOf(const std::string& node);
  // The put's outcome went up: the sender will never send it again.
  void settle(Node* to, uint64_t id);
  // The floor to announce to `to` now, if it moved at least `stride` ids past the last one
  // told (told() records it once it went out).
  bool due(const Node* to, uint64_t stride, uint64_t* floor) const;
  void told(Node* to, uint64_t floor) { to->told = floor; }
  template <typename Fn>
  void forEach(Fn fn) {
    for (auto& [id, node] : nodes_) fn(node);
  }

 private:
  uint64_t floorOf(const Node& n) const { return n.open.empty() ? next_ : n.open.front().first; }

  std::unordered_map<std::string, Node> nodes_;  // never erased: OutPut::to points in here
  uint64_t next_ = 1;
};

}  // namespace rvma
