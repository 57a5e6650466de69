#include "sent_puts.h"

#include <algorithm>

namespace rvma {

SentPuts::Node* SentPuts::nodeOf(const std::string& node) {
  Node& n = nodes_[node];
  if (n.id.empty()) n.id = node;
  return &n;
}

uint64_t SentPuts::assign(Node* to) {
  uint64_t id = next_++;
  to->open.emplace_back(id, false);
  return id;
}

void SentPuts::settle(Node* to, uint64_t id) {
  // The usual case: answers come in the order the puts were sent.
  if (!to->open.empty() && to->open.front().first == id) {
    to->open.pop_front();
    while (!to->open.empty() && to->open.front().second) to->open.pop_front();
    return;
  }
  auto it = std::lower_bound(to->open.begin(), to->open.end(), std::make_pair(id, false));
  if (it == to->open.end() || it->first != id) return;
  it->second = true;
  while (!to->open.empty() && to->open.front().second) to->open.pop_front();
}

bool SentPuts::due(const Node* to, uint64_t stride, uint64_t* floor) const {
  uint64_t now = floorOf(*to);
  if (now <= to->told || now - to->told < stride) return false;
  *floor = now;
  return true;
}

}  // namespace rvma
