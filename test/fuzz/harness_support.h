// What the libFuzzer harnesses of the providers share: a check that aborts (libFuzzer reports
// it as a crash), memory with canaries around it, and the provider fds watched by hand.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <map>
#include <utility>
#include <vector>

#include "native/progress.h"

namespace rvma::fuzz {

inline void require(bool holds) {
  if (!holds) std::abort();
}

// Memory with a known pattern on both sides of the part handed out.
class Guarded {
 public:
  static constexpr size_t kCanary = 64;
  explicit Guarded(size_t size) : size_(size), mem_(size + 2 * kCanary, 0xa5) {}
  uint8_t* data() { return mem_.data() + kCanary; }
  size_t size() const { return size_; }
  bool intact() const {
    for (size_t i = 0; i < kCanary; i++) {
      if (mem_[i] != 0xa5 || mem_[kCanary + size_ + i] != 0xa5) return false;
    }
    return true;
  }

 private:
  size_t size_;
  std::vector<uint8_t> mem_;
};

// The provider's fds, watched here instead of by libuv.
class Poller : public ExternalPoller {
 public:
  std::map<uint64_t, std::pair<int, uint32_t>> fds;
  bool watch(uint64_t token, int fd, uint32_t events) override {
    fds[token] = {fd, events};
    return true;
  }
  void change(uint64_t token, uint32_t events) override { fds[token].second = events; }
  void unwatch(uint64_t token) override { fds.erase(token); }
};

}  // namespace rvma::fuzz
