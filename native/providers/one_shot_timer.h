// A one-shot timer on the progress context (a timerfd in the endpoint's epoll set): the
// providers' periodic ticks are too coarse for tcp's redial backoff and for lazy acks, which
// want milliseconds.
#pragma once
#include <cstdint>
#include <functional>

#include "../progress.h"

namespace rvma {

class OneShotTimer {
 public:
  OneShotTimer(Progress& progress, std::function<void()> fire) : progress_(progress), fire_(std::move(fire)) {}
  ~OneShotTimer();
  OneShotTimer(const OneShotTimer&) = delete;
  OneShotTimer& operator=(const OneShotTimer&) = delete;

  // Makes its timerfd now (progress context). A provider calls it as it starts: arming later,
  // with the process out of descriptors (a peer can bring that about), would fail, and a timer
  // that never fires holds back what waits for it for good (lazy acks, shm's deferred kicks).
  bool prepare();
  // Fires once `delayMs` from now (0: at the next turn), replacing any earlier arming.
  void arm(uint64_t delayMs);
  void disarm();
  // Unregisters it (progress context); it fires no more.
  void stop();

 private:
  Progress& progress_;
  std::function<void()> fire_;
  int fd_ = -1;
  uint64_t token_ = 0;
};

}  // namespace rvma
