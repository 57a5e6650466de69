// Who may place bytes in a mailbox or region: the node ids its owner allowed, or anyone when
// the list is empty. Checked by the receiver's core before a byte is placed; the sender is the
// node id the provider's connection was set up with.
#pragma once
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace rvma {

struct AccessPolicy {
  std::vector<std::string> allow;  // empty: every peer

  bool permits(std::string_view sender) const {
    return allow.empty() || std::find(allow.begin(), allow.end(), sender) != allow.end();
  }
};

}  // namespace rvma
