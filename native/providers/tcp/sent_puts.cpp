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
  auto it = std::lower_bound(to->open.begin(), to->open.end(), std::make_pair(id, false));
  if (it == to->open.end() || it->first != id) return;
  it->second = true;
  while (!to->open.empty() && to->open.front().second) to->open.pop_front();
}

bool SentPuts::due(Node* to, uint64_t stride, uint64_t* floor) {
  uint64_t now = floorOf(*to);
  if (now <= to->told || now - to->told < stride) return false;
  to->told = now;
  *floor = now;
  return true;
}

}  // namespace rvma
