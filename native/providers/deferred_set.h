// Connections that hold something back for a while (tcp: lazy acks; shm: the kick that tells a
// sleeping peer about them): one timer for the whole set, armed by the first connection added
// after it fired, so a busy provider pays a timer syscall per delay at most, not one per put.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "one_shot_timer.h"

namespace rvma {

template <typename Conn>
class DeferredSet {
 public:
  DeferredSet(Progress& progress, uint64_t delayMs, std::function<void(Conn*)> due)
      : delayMs_(delayMs), due_(std::move(due)), timer_(progress, [this] { fire(); }) {}

  // Makes the timer now (see OneShotTimer::prepare).
  bool prepare() { return timer_.prepare(); }
  void add(Conn* c) {
    if (std::find(conns_.begin(), conns_.end(), c) != conns_.end()) return;
    conns_.push_back(c);
    if (conns_.size() == 1) timer_.arm(delayMs_);
  }
  // c is going away: it is not called, even if the timer is firing now.
  void remove(Conn* c) {
    conns_.erase(std::remove(conns_.begin(), conns_.end(), c), conns_.end());
    firing_.erase(std::remove(firing_.begin(), firing_.end(), c), firing_.end());
  }
  void stop() {
    timer_.stop();
    conns_.clear();
    firing_.clear();
  }

 private:
  void fire() {
    firing_.swap(conns_);
    while (!firing_.empty()) {
      Conn* c = firing_.front();  // the call may remove others (a connection it made fail)
      firing_.erase(firing_.begin());
      due_(c);
    }
  }

  uint64_t delayMs_;
  std::function<void(Conn*)> due_;
  OneShotTimer timer_;
  std::vector<Conn*> conns_, firing_;
};

}  // namespace rvma
